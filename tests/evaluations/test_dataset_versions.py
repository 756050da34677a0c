"""Dataset versions: one draft at a time, freezing, and the next draft as a copy of the last
frozen version (cases with their overrides, and checks with every setting)."""

import pytest
from django.db import IntegrityError, transaction

from evaluations.actions.create_draft_dataset_version import CreateDraftDatasetVersion
from evaluations.actions.freeze_dataset_version import FreezeDatasetVersion
from evaluations.models import DatasetVersion
from governance.models import AuditEntry
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid
from tests.support import factories

CHECKS = [
    {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0},
    {
        "label": "Complete",
        "kind": "completeness",
        "params": {},
        "threshold": 0.5,
        "quality_grader": True,
        "requires_calibration": True,
        "judge_model": "judge-x",
    },
]


@pytest.fixture
def frozen(db):
    return factories.dataset_version(
        cases=[("c1", "hello", {"overrides": {"Shape": {"threshold": 0.5}}, "tags": ["a"]})],
        checks=CHECKS,
    )


def test_next_draft_copies_cases_and_checks_of_the_last_frozen_version(editor, frozen):
    draft = CreateDraftDatasetVersion(acting_user=editor, dataset=frozen.dataset).execute()
    assert draft.number == 2 and not draft.is_frozen
    copied = {c.label: c for c in draft.checks.all()}
    assert copied["Complete"].quality_grader and copied["Complete"].requires_calibration
    assert copied["Complete"].judge_model == "judge-x"
    case = draft.case_versions.get()
    assert case.case_id == frozen.case_versions.get().case_id  # the same stable case
    assert case.overrides == {"Shape": {"threshold": 0.5}} and case.tags == ["a"]
    assert AuditEntry.objects.filter(action="evaluations.dataset_version.create").exists()


def test_a_dataset_has_at_most_one_draft(editor, frozen):
    CreateDraftDatasetVersion(acting_user=editor, dataset=frozen.dataset).execute()
    with pytest.raises(ActionConflict):
        CreateDraftDatasetVersion(acting_user=editor, dataset=frozen.dataset).execute()
    with pytest.raises(IntegrityError), transaction.atomic():
        DatasetVersion.objects.create(dataset=frozen.dataset, number=9)


def test_freezing_makes_a_draft_immutable_and_is_audited(editor, frozen):
    draft = CreateDraftDatasetVersion(acting_user=editor, dataset=frozen.dataset).execute()
    FreezeDatasetVersion(acting_user=editor, dataset_version=draft, note="v2").execute()
    draft.refresh_from_db()
    assert draft.is_frozen and draft.frozen_by == editor
    assert AuditEntry.objects.filter(
        action="evaluations.dataset_version.freeze", target_id=str(draft.pk)
    ).exists()
    with pytest.raises(ActionConflict):
        FreezeDatasetVersion(acting_user=editor, dataset_version=draft).execute()


def test_an_empty_draft_cannot_be_frozen(editor):
    empty = factories.dataset_version(frozen=False)
    with pytest.raises(ActionInvalid):
        FreezeDatasetVersion(acting_user=editor, dataset_version=empty).execute()


def test_builder_cannot_freeze_or_start_drafts(builder, frozen):
    with pytest.raises(ActionDenied):
        CreateDraftDatasetVersion(acting_user=builder, dataset=frozen.dataset).execute()
    assert frozen.dataset.versions.count() == 1
