"""The dataset verbs in the role matrix: start a draft, change a check,
freeze. Each role granted globally, for this dataset only ("here"; for agent roles: their agent
only), for another object only, and an outsider; through the action, the API and the admin.
Only Editors (global, or of this dataset) and global Admins may."""

import pytest
from rest_framework.test import APIClient

from evaluations.actions.create_draft_dataset_version import CreateDraftDatasetVersion
from evaluations.actions.freeze_dataset_version import FreezeDatasetVersion
from evaluations.actions.update_check import UpdateCheck
from governance.models import AuditEntry
from sherlock.core.errors import ActionDenied
from tests.support import factories
from tests.support.governance import EDITORS, PERSONAS, persona_id

ALLOWED = [p for p in PERSONAS if p in EDITORS]
REFUSED = [p for p in PERSONAS if p not in EDITORS]
may = pytest.mark.parametrize("role,scope", ALLOWED, ids=persona_id)
may_not = pytest.mark.parametrize("role,scope", REFUSED, ids=persona_id)


@pytest.fixture
def draft(gate_dataset):
    """A draft of the gate dataset, with the frozen version's cases and its Tools check."""
    return factories.dataset_version(
        gate_dataset,
        cases=[("extra", "q", {})],
        checks=[{"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}],
        frozen=False,
    )


def check_form(check, threshold):
    return {
        "dataset_version": check.dataset_version_id,
        "label": check.label,
        "kind": check.kind,
        "params": '{"match": "any_order"}',
        "threshold": threshold,
        "mode": check.mode,
        "judge_model": "",
        "min_labels": 20,
        "kappa_floor": 0.6,
        "position": 0,
    }


def assert_refused(user, prefix, verb, target):
    """The action's own refusal entry, against the object it was given."""
    entry = AuditEntry.objects.filter(action=f"{prefix}.refused", actor=user).latest("sequence")
    assert entry.after == {"verb": verb, "code": "permission_denied"}
    assert entry.target_id == str(target.pk) and "Editor role needed" in entry.reason


@may
def test_editors_start_drafts_change_checks_and_freeze(role, scope, persona, gate_dataset):
    user = persona(role, scope)
    draft = CreateDraftDatasetVersion(acting_user=user, dataset=gate_dataset).execute()
    check = draft.checks.get()
    UpdateCheck(acting_user=user, check=check, threshold=0.5).execute()
    FreezeDatasetVersion(acting_user=user, dataset_version=draft).execute()
    draft.refresh_from_db()
    assert draft.is_frozen and draft.checks.get().threshold == 0.5
    for action in ("dataset_version.create", "check.update", "dataset_version.freeze"):
        assert AuditEntry.objects.filter(action=f"evaluations.{action}", actor=user).exists()


@may_not
def test_others_may_not_touch_datasets(role, scope, persona, gate_dataset, draft):
    user = persona(role, scope)
    check = draft.checks.get()
    fresh = factories.dataset("fresh")
    with pytest.raises(ActionDenied):
        CreateDraftDatasetVersion(acting_user=user, dataset=fresh).execute()
    assert_refused(user, "evaluations.dataset_version", "create", fresh)
    with pytest.raises(ActionDenied):
        UpdateCheck(acting_user=user, check=check, threshold=0.5).execute()
    assert_refused(user, "evaluations.check", "update", check)
    with pytest.raises(ActionDenied):
        FreezeDatasetVersion(acting_user=user, dataset_version=draft).execute()
    assert_refused(user, "evaluations.dataset_version", "freeze", draft)
    draft.refresh_from_db()
    assert not draft.is_frozen and draft.checks.get().threshold == 1.0


@may
def test_editors_change_a_check_through_the_api_and_the_admin(
    role, scope, persona, draft, client, password
):
    user = persona(role, scope)
    check = draft.checks.get()
    api = APIClient()
    api.force_authenticate(user)
    assert (
        api.patch(f"/api/v1/checks/{check.pk}/", {"threshold": 0.5}, format="json").status_code
        == 200
    )
    client.login(username=user.username, password=password)
    response = client.post(
        f"/admin/evaluations/check/{check.pk}/change/", check_form(check, "0.25")
    )
    assert response.status_code == 302
    check.refresh_from_db()
    assert check.threshold == 0.25


@may_not
def test_others_cannot_change_a_check_through_the_api_or_the_admin(
    role, scope, persona, draft, client, password
):
    user = persona(role, scope)
    check = draft.checks.get()
    api = APIClient()
    api.force_authenticate(user)
    answer = api.patch(f"/api/v1/checks/{check.pk}/", {"threshold": 0.5}, format="json")
    # 403 for a role that may see the dataset, 404 for a user who may not even see it.
    assert answer.status_code in (403, 404)
    entries = AuditEntry.objects.filter(action="evaluations.check.refused", actor=user)
    api_entry = entries.get()
    assert api_entry.target_id == str(check.pk)
    code = {403: "permission_denied", 404: "not_found"}[answer.status_code]
    assert api_entry.after["code"] == code
    client.login(username=user.username, password=password)
    page = client.post(f"/admin/evaluations/check/{check.pk}/change/", check_form(check, "0"))
    # 403, or for a check the user may not see, the admin's "does not exist" redirect home.
    assert page.status_code == 403 or page["Location"] == "/admin/"
    admin_entry = entries.exclude(pk=api_entry.pk).get()
    assert admin_entry.target_id == str(check.pk) and admin_entry.after["verb"] == "change"
    assert admin_entry.after["code"] == code  # the admin's 403 on a hidden row: still not_found
    check.refresh_from_db()
    assert check.threshold == 1.0
