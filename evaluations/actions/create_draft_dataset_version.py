"""CreateDraftDatasetVersion: start the next draft of a dataset as a copy of the last frozen one."""

from django.db.models import Max

from evaluations.actions.case_fields import CASE_FIELDS
from evaluations.actions.check_fields import CHECK_FIELDS
from evaluations.models import CaseVersion, Check, Dataset, DatasetVersion
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.limits import NOTE_MAX
from sherlock.core.permissions import user_can


class CreateDraftDatasetVersion(Action):
    """A dataset has at most one draft. The new draft copies the newest frozen version's cases
    (content and overrides) and checks, so an Editor changes only what differs."""

    noun = "dataset_version"
    verb = "create"
    text_limits = {"note": NOTE_MAX}

    def __init__(self, *, acting_user, dataset, note=""):
        super().__init__(acting_user=acting_user)
        self.dataset = dataset
        self.note = note

    def check(self):
        if not user_can(self.acting_user, "edit", self.dataset):
            raise ActionDenied("You may not edit this dataset (Editor role needed).")
        if self.dataset.versions.filter(frozen_at__isnull=True).exists():
            raise ActionConflict("This dataset already has a draft version.", code="draft_exists")

    def perform(self):
        Dataset.objects.select_for_update().filter(pk=self.dataset.pk).first()
        number = (self.dataset.versions.aggregate(n=Max("number"))["n"] or 0) + 1
        source = self.dataset.latest_frozen
        draft = DatasetVersion.objects.create(dataset=self.dataset, number=number, note=self.note)
        draft.copied_from = source  # what the caller says it started from (not a column)
        if source is not None:
            Check.objects.bulk_create(
                Check(dataset_version=draft, **{f: getattr(c, f) for f in CHECK_FIELDS})
                for c in source.checks.all()
            )
            CaseVersion.objects.bulk_create(
                CaseVersion(
                    dataset_version=draft,
                    case_id=cv.case_id,
                    **{f: getattr(cv, f) for f in CASE_FIELDS},
                )
                for cv in source.case_versions.all()
            )
        self.audit(
            target=draft,
            after={"number": number, "copied_from": source.number if source else None},
        )
        return draft
