"""CreateCase: an Editor adds a case to a draft dataset version."""

from evaluations.actions._case_fields import CaseVerb, snapshot, validate_content, validate_key
from evaluations.models import Case, CaseVersion
from sherlock.core.audit import audit
from sherlock.core.errors import ActionInvalid


class CreateCase(CaseVerb):
    """Add a case (new, or an existing key not yet in this version) to a draft version."""

    def __init__(self, *, acting_user, dataset_version, key, **content):
        super().__init__(acting_user=acting_user)
        self.dataset_version = dataset_version
        self.key = key
        self.content = content

    def perform(self):
        validate_key(self.key)
        validate_content(self.content, list(self.dataset_version.checks.all()))
        case, _ = Case.objects.get_or_create(dataset=self.dataset_version.dataset, key=self.key)
        if CaseVersion.objects.filter(dataset_version=self.dataset_version, case=case).exists():
            raise ActionInvalid(f"key: case {self.key!r} is already in this version", field="key")
        case_version = CaseVersion.objects.create(
            dataset_version=self.dataset_version, case=case, **self.content
        )
        audit(
            "evaluations.case.create",
            actor=self.acting_user,
            target=case_version,
            after={"key": self.key, **snapshot(case_version)},
        )
        return case_version
