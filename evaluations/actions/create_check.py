"""CreateCheck: an Editor adds a check to a draft dataset version."""

from evaluations.actions.check_fields import CheckVerb, refuse_unknown, snapshot, validate_check
from evaluations.models import Check


class CreateCheck(CheckVerb):
    """Add a check to a draft dataset version."""

    noun = "check"
    verb = "create"

    def __init__(self, *, acting_user, dataset_version, **fields):
        super().__init__(acting_user=acting_user)
        self.dataset_version = dataset_version
        refuse_unknown(fields)
        self.fields = fields

    def perform(self):
        check = Check(dataset_version=self.dataset_version, **self.fields)
        validate_check(check)
        check.save()
        self.audit(target=check, after=snapshot(check))
        return check
