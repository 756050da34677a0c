"""CreateCase: an Editor adds a case to a draft dataset version."""

from evaluations.actions.case_fields import CaseVerb, content_errors, key_errors, snapshot
from evaluations.models import Case, CaseVersion
from sherlock.core.errors import raise_invalid


class CreateCase(CaseVerb):
    """Add a case (new, or an existing key not yet in this version) to a draft version."""

    noun = "case"
    verb = "create"

    def __init__(self, *, acting_user, dataset_version, key, **content):
        super().__init__(acting_user=acting_user)
        self.dataset_version = dataset_version
        self.key = key
        self.content = content

    def perform(self):
        # Every error of the key and the content at once (InvalidFields when several).
        raise_invalid(
            key_errors(self.key, self.dataset_version)
            + content_errors(self.content, list(self.dataset_version.checks.all()))
        )
        case, _ = Case.objects.get_or_create(dataset=self.dataset_version.dataset, key=self.key)
        case_version = CaseVersion.objects.create(
            dataset_version=self.dataset_version, case=case, **self.content
        )
        self.audit(
            target=case_version,
            after={"key": self.key, **snapshot(case_version)},
        )
        return case_version
