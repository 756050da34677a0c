"""A case's content is validated before anything is written: an override that would silently
change scoring is refused naming its field, a key is checked before it reaches the database, and
an edit that lost a race with a freeze is refused. A check's threshold and kappa floor are
fractions, refused on their field outside [0, 1] and by the database."""

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluations.actions.create_case import CreateCase
from evaluations.actions.create_check import CreateCheck
from evaluations.actions.remove_case import RemoveCase
from evaluations.actions.update_case import UpdateCase
from evaluations.models import Case, CaseVersion, Check, DatasetVersion
from governance.models import AuditEntry
from sherlock.core.errors import ActionConflict, ActionInvalid, InvalidFields
from tests.support import factories
from tests.support.factories import api

pytestmark = pytest.mark.django_db

SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}


@pytest.fixture
def draft(db):
    return factories.dataset_version(cases=[("c1", "hello", {})], checks=[SHAPE], frozen=False)


def update_overrides(editor, draft, override):
    case_version = draft.case_versions.get()
    return UpdateCase(
        acting_user=editor, case_version=case_version, overrides={"Shape": override}
    ).execute()


# --- Overrides ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"mode": "bogus"}, "overrides.Shape.mode"),
        ({"disabled": "yes"}, "overrides.Shape.disabled"),
        ({"disabled": 0}, "overrides.Shape.disabled"),
        ({"threshold": True}, "overrides.Shape.threshold"),
        ({"threshold": 5}, "overrides.Shape.threshold"),
        ({"params": ["type", "json"]}, "overrides.Shape.params"),
        ({"params": {"type": "nonsense"}}, "overrides.Shape.params"),
    ],
)
def test_an_override_that_would_silently_change_scoring_is_refused(editor, draft, override, field):
    with pytest.raises(ActionInvalid) as refused:
        update_overrides(editor, draft, override)

    assert refused.value.field == field
    assert draft.case_versions.get().overrides == {}
    assert not AuditEntry.objects.filter(action="evaluations.case.update").exists()


def test_the_api_answers_a_bogus_mode_with_400_naming_the_field(editor, draft):
    case_version = draft.case_versions.get()

    response = api(editor).patch(
        f"/api/v1/cases/{case_version.pk}/",
        {"overrides": {"Shape": {"mode": "bogus"}}},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["field"] == "overrides.Shape.mode"


def test_every_error_of_a_case_is_refused_at_once_each_naming_its_field(editor, draft):
    with pytest.raises(InvalidFields) as refused:
        CreateCase(
            acting_user=editor,
            dataset_version=draft,
            key="c1",
            expected_tools=[{"nme": "kb.search"}],
            overrides={"Nope": {}, "Shape": {"mode": "bogus"}},
        ).execute()

    assert [e.field for e in refused.value.errors] == [
        "key",
        "expected_tools[0]",
        "overrides.Nope",
        "overrides.Shape.mode",
    ]
    assert refused.value.field == "key"  # the first one's, as a plain ActionInvalid has
    assert str(refused.value).startswith("key: case 'c1' is already in this version; ")
    assert draft.case_versions.count() == 1


def test_the_api_answers_every_error_of_a_case_in_the_one_error_shape(editor, draft):
    case_version = draft.case_versions.get()

    response = api(editor).patch(
        f"/api/v1/cases/{case_version.pk}/",
        {
            "expected_tools": ["kb.search", {"arguments": {}}],
            "overrides": {"Nope": {}, "Shape": {"threshold": 5, "disabled": "no"}},
        },
        format="json",
    )

    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "expected_tools[1]" and body["code"] == "invalid"
    assert body["detail"] == (
        "expected_tools[1]: needs a tool name (a string, or an object with a name)"
        " (3 more error(s))"
    )
    assert [(e["field"], e["detail"]) for e in body["errors"]] == [
        (
            "expected_tools[1]",
            "expected_tools[1]: needs a tool name (a string, or an object with a name)",
        ),
        ("overrides.Nope", "overrides.Nope: no check with this label"),
        ("overrides.Shape.threshold", "overrides.Shape.threshold: must be in [0, 1]"),
        ("overrides.Shape.disabled", "overrides.Shape.disabled: must be true or false"),
    ]
    assert all(e["code"] == "invalid" for e in body["errors"])
    case_version.refresh_from_db()
    assert case_version.expected_tools == [] and case_version.overrides == {}


def test_a_well_formed_override_is_kept(editor, draft):
    override = {"mode": "informative", "disabled": False, "threshold": 0.5, "params": {}}

    case_version = update_overrides(editor, draft, override)

    assert case_version.overrides == {"Shape": override}


# --- Keys -------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["k" * 201, "refund me", "refund/1", 42])
def test_a_key_that_cannot_be_stored_is_refused_before_any_row_is_written(editor, draft, key):
    with pytest.raises(ActionInvalid) as refused:
        CreateCase(acting_user=editor, dataset_version=draft, key=key, input="x").execute()

    assert refused.value.field == "key"
    assert list(Case.objects.values_list("key", flat=True)) == ["c1"]


def test_the_api_answers_a_300_character_key_with_400_not_a_database_error(editor, draft):
    body = {"dataset_version": draft.pk, "key": "k" * 300, "input": "x"}

    response = api(editor).post("/api/v1/cases/", body, format="json")

    assert response.status_code == 400
    assert response.json()["field"] == "key"
    assert not Case.objects.filter(key="k" * 300).exists()


def test_a_key_of_200_slug_characters_is_accepted(editor, draft):
    key = "k" * 200

    case_version = CreateCase(acting_user=editor, dataset_version=draft, key=key).execute()

    assert case_version.case.key == key


# --- Input ------------------------------------------------------------------------------------


def test_a_null_input_is_refused_by_create_update_and_the_api_as_by_the_import(editor, draft):
    with pytest.raises(ActionInvalid) as refused:
        CreateCase(acting_user=editor, dataset_version=draft, key="new", input=None).execute()
    assert refused.value.field == "input"
    case_version = draft.case_versions.get()
    with pytest.raises(ActionInvalid) as refused:
        UpdateCase(acting_user=editor, case_version=case_version, input=None).execute()
    assert refused.value.field == "input"
    body = {"dataset_version": draft.pk, "key": "new", "input": None}
    response = api(editor).post("/api/v1/cases/", body, format="json")
    assert response.status_code == 400 and response.json()["field"] == "input"

    assert list(Case.objects.values_list("key", flat=True)) == ["c1"]
    case_version.refresh_from_db()
    assert case_version.input == "hello"
    assert not AuditEntry.objects.filter(action__startswith="evaluations.case.").exists()


# --- A freeze that lands between the check and the write ------------------------------------------


def freeze_behind_the_callers_back(draft):
    DatasetVersion.objects.filter(pk=draft.pk).update(frozen_at=timezone.now())


@pytest.mark.parametrize(
    "make_action",
    [
        lambda editor, draft, cv: CreateCase(acting_user=editor, dataset_version=draft, key="new"),
        lambda editor, draft, cv: UpdateCase(acting_user=editor, case_version=cv, input="changed"),
        lambda editor, draft, cv: RemoveCase(acting_user=editor, case_version=cv),
    ],
    ids=["create", "update", "remove"],
)
def test_a_case_action_holding_a_stale_draft_is_refused_once_the_version_is_frozen(
    editor, draft, make_action
):
    case_version = draft.case_versions.get()
    action = make_action(editor, draft, case_version)  # reads the version while it is a draft
    freeze_behind_the_callers_back(draft)

    with pytest.raises(ActionConflict) as refused:
        action.execute()

    assert refused.value.code == "version_frozen"
    assert list(CaseVersion.objects.values_list("case__key", "input")) == [("c1", "hello")]


# --- Check bounds -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"threshold": 5}, "threshold"),
        ({"threshold": -0.1}, "threshold"),
        ({"kappa_floor": 9}, "kappa_floor"),
        ({"kappa_floor": -1}, "kappa_floor"),
    ],
)
def test_a_check_bound_outside_the_unit_interval_is_refused_on_its_field(editor, fields, field):
    draft = factories.dataset_version(cases=[("c1", "hello", {})], frozen=False)

    with pytest.raises(ActionInvalid) as refused:
        CreateCheck(acting_user=editor, dataset_version=draft, **{**SHAPE, **fields}).execute()

    assert refused.value.field == field
    assert not Check.objects.exists()


@pytest.mark.parametrize("fields", [{"threshold": 5}, {"kappa_floor": 9}])
def test_the_api_names_the_field_of_a_check_bound_out_of_range(editor, fields):
    draft = factories.dataset_version(cases=[("c1", "hello", {})], frozen=False)
    body = {**SHAPE, "dataset_version": draft.pk, **fields}

    response = api(editor).post("/api/v1/checks/", body, format="json")

    assert response.status_code == 400
    assert response.json()["field"] == next(iter(fields))
    assert not Check.objects.exists()


def test_the_database_refuses_a_kappa_floor_out_of_range(draft):
    with pytest.raises(IntegrityError), transaction.atomic():
        Check.objects.create(dataset_version=draft, label="Judge", kind="custom", kappa_floor=9)


def test_every_error_of_a_check_is_refused_at_once_each_naming_its_field(editor):
    draft = factories.dataset_version(cases=[("c1", "hello", {})], frozen=False)
    bad = {**SHAPE, "threshold": 5, "kappa_floor": 9, "params": {"type": "nonsense"}}

    with pytest.raises(InvalidFields) as refused:
        CreateCheck(acting_user=editor, dataset_version=draft, **bad).execute()

    assert {e.field for e in refused.value.errors} == {"threshold", "kappa_floor", "params"}
    assert not Check.objects.exists()


def test_a_dataset_with_a_bad_slug_and_no_name_is_refused_with_both(editor):
    from evaluations.actions.create_dataset import CreateDataset

    with pytest.raises(InvalidFields) as refused:
        CreateDataset(acting_user=editor, slug="not a slug", name="").execute()

    assert {e.field for e in refused.value.errors} == {"slug", "name"}


def test_an_unknown_key_of_expected_is_refused_naming_it(editor, draft):
    """`{"bogus": 1}` would be stored and never read by any check."""
    from sherlock.core.errors import each_error

    with pytest.raises(ActionInvalid) as refused:
        CreateCase(
            acting_user=editor,
            dataset_version=draft,
            key="typo",
            input="q",
            expected={"bogus": 1, "output": "a"},
        ).execute()
    messages = [str(error) for error in each_error(refused.value)]
    assert any(m.startswith("expected.bogus: not a key of expected") for m in messages)
    assert not CaseVersion.objects.filter(dataset_version=draft, case__key="typo").exists()
