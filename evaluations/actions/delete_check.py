"""DeleteCheck: an Editor removes a check from a draft dataset version."""

from evaluations.actions.check_fields import CheckVerb, snapshot


class DeleteCheck(CheckVerb):
    """Remove a check from a draft dataset version."""

    noun = "check"
    verb = "delete"

    def __init__(self, *, acting_user, check):
        super().__init__(acting_user=acting_user)
        self.check_obj = check
        self.dataset_version = check.dataset_version

    def perform(self):
        before = snapshot(self.check_obj)
        self.audit(target=self.check_obj, before=before)
        self.check_obj.delete()
