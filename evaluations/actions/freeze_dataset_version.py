"""FreezeDatasetVersion: make a dataset's draft immutable so that runs can pin it."""

from django.utils import timezone

from evaluations.models import DatasetVersion
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid
from sherlock.core.limits import NOTE_MAX
from sherlock.core.permissions import user_can


class FreezeDatasetVersion(Action):
    """Freeze a draft dataset version (Editor). Its cases, checks and overrides can no longer
    change; the next draft starts as a copy of it (`CreateDraftDatasetVersion`)."""

    noun = "dataset_version"
    verb = "freeze"

    text_limits = {"note": NOTE_MAX}

    def __init__(self, *, acting_user, dataset_version, note=""):
        super().__init__(acting_user=acting_user)
        self.dataset_version = dataset_version
        self.note = note

    def check(self):
        if not user_can(self.acting_user, "edit", self.dataset_version.dataset):
            raise ActionDenied("You may not freeze versions of this dataset (Editor role needed).")
        if self.dataset_version.is_frozen:
            raise ActionConflict("This dataset version is already frozen.", code="already_frozen")
        if not self.dataset_version.case_versions.exists():
            raise ActionInvalid("A dataset version needs at least one case.", field="cases")

    def perform(self):
        now = timezone.now()
        updated = DatasetVersion.objects.filter(
            pk=self.dataset_version.pk, frozen_at__isnull=True
        ).update(
            frozen_at=now, frozen_by=self.acting_user, note=self.note or self.dataset_version.note
        )
        if updated != 1:
            raise ActionConflict("This dataset version is already frozen.", code="already_frozen")
        self.dataset_version.refresh_from_db()
        self.audit(
            target=self.dataset_version,
            before={"frozen_at": None},
            after={"frozen_at": now, "cases": self.dataset_version.case_versions.count()},
            reason=self.note,
        )
        return self.dataset_version
