"""RemoveCase: an Editor removes a case from a draft dataset version."""

from evaluations.actions.case_fields import CaseVerb, snapshot


class RemoveCase(CaseVerb):
    """Remove a case from a draft version (earlier frozen versions keep it)."""

    noun = "case"
    verb = "remove"

    def __init__(self, *, acting_user, case_version):
        super().__init__(acting_user=acting_user)
        self.case_version = case_version
        self.dataset_version = case_version.dataset_version

    def perform(self):
        self.audit(
            target=self.case_version,
            before=snapshot(self.case_version),
        )
        self.case_version.delete()
