"""UpdateCase: an Editor changes a case's content in a draft dataset version."""

from evaluations.actions.case_fields import CaseVerb, snapshot, validate_content
from evaluations.models import CaseVersion


class UpdateCase(CaseVerb):
    """Change a case's content in a draft version (only the fields given)."""

    noun = "case"
    verb = "update"

    def __init__(self, *, acting_user, case_version, **changes):
        super().__init__(acting_user=acting_user)
        self.case_version = case_version
        self.dataset_version = case_version.dataset_version
        self.changes = changes

    def perform(self):
        validate_content(self.changes, list(self.dataset_version.checks.all()))
        case_version = CaseVersion.objects.select_for_update().get(pk=self.case_version.pk)
        before = snapshot(case_version)
        for name, value in self.changes.items():
            setattr(case_version, name, value)
        case_version.save(update_fields=list(self.changes) or None)
        self.audit(
            target=case_version,
            before=before,
            after=snapshot(case_version),
        )
        return case_version
