"""Every role on every scope it has a meaning on (OBJECT_PERMS), walked end to end: an Admin grants
it through the API, the user uses it through the API, the pages, the admin and the commands, the
Admin revokes it through the API, and the user can no longer do what only that grant allowed, by any
of those paths; the grant and the revocation are audited, the revocation removes exactly the grant's
verbs, nothing is listed afterwards and a second revocation is 409 `not_held`."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from guardian.shortcuts import get_user_perms

from agents.choices import VersionState
from governance.models import AuditEntry
from governance.people.roles import OBJECT_PERMS
from tests.support import factories
from tests.support.governance import REASON, make_version

WALK = [
    ("Editor", "global"),
    ("Editor", "dataset"),
    ("Builder", "global"),
    ("Builder", "agent"),
    ("Publisher", "global"),
    ("Publisher", "agent"),
    ("Admin", "global"),
    ("Admin", "agent"),
    ("Admin", "dataset"),
]


def fresh(user):
    return type(user).objects.get(pk=user.pk)  # a fresh permission cache


def api(user):
    return factories.api(fresh(user))


def page(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def world(passed_request, gate_dataset, agent, author):
    """A passed version of the agent (to publish), a fresh draft (to request publication of),
    and a draft of the gate dataset with one check (to edit)."""
    draft = factories.dataset_version(
        gate_dataset,
        cases=[("extra", "q", {})],
        checks=[{"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}],
        frozen=False,
    )
    return {
        "passed": passed_request.agent_version,
        "draft": make_version(agent, author, good=True),
        "check": draft.checks.get(),
        "agent": agent,
        "dataset": gate_dataset,
    }


# --- the Editor's verbs: edit a check (API, admin), import cases (command) -----------------------


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


def import_by_command(user, world, tmp_path, key):
    path = tmp_path / f"{key}.jsonl"
    path.write_text(json.dumps({"key": key, "input": "y"}) + "\n")
    call_command(
        "import_cases",
        world["dataset"].slug,
        str(path),
        "--user",
        user.username,
        stdout=io.StringIO(),
    )


def edits(user, world, tmp_path):
    check = world["check"]
    answer = api(user).patch(f"/api/v1/checks/{check.pk}/", {"threshold": 0.5}, format="json")
    assert answer.status_code == 200, answer.content
    saved = page(user).post(
        f"/admin/evaluations/check/{check.pk}/change/", check_form(check, "0.25")
    )
    assert saved.status_code == 302
    check.refresh_from_db()
    assert check.threshold == 0.25
    import_by_command(user, world, tmp_path, "while-granted")
    assert world["dataset"].cases.filter(key="while-granted").exists()
    assert AuditEntry.objects.filter(action="evaluations.case.import", actor=user).exists()


def no_admin(response):
    return response.status_code == 302 and response["Location"].startswith("/admin/login/")


def cannot_edit(user, world, tmp_path):
    check = world["check"]
    answer = api(user).patch(f"/api/v1/checks/{check.pk}/", {"threshold": 0.9}, format="json")
    assert answer.status_code in (403, 404)
    saved = page(user).post(f"/admin/evaluations/check/{check.pk}/change/", check_form(check, "0"))
    # Without a grant left the user is no staff any more (governance.people.roles.derive_staff): the
    # admin sends them to the sign-in page.
    assert saved.status_code == 403 or saved["Location"] == "/admin/" or no_admin(saved)
    check.refresh_from_db()
    assert check.threshold == 0.25
    with pytest.raises(CommandError, match="Editor role needed"):
        import_by_command(user, world, tmp_path, "after-revoke")
    assert not world["dataset"].cases.filter(key="after-revoke").exists()
    # The API's refusal, and the admin's when the user still enters the admin (a grant left).
    refusals = 1 if no_admin(saved) else 2
    assert AuditEntry.objects.filter(action="evaluations.check.refused", actor=user).count() == (
        refusals
    )


# --- the Builder's verbs: create a draft version (API), request publication (page) ----------------

VERSION = {"adapter": "python", "config": {"callable": "tests.support.agents_under_test.echo"}}


def request_button(user, version):
    response = page(user).get(f"/governance/versions/{version.pk}/")
    return response.status_code == 200 and 'id="verb-request"' in response.content.decode()


def builds(user, world):
    body = {**VERSION, "agent": world["agent"].slug}
    assert api(user).post("/api/v1/versions/", body, format="json").status_code == 201
    assert request_button(user, world["draft"])


def cannot_build(user, world):
    count = world["agent"].versions.count()
    body = {**VERSION, "agent": world["agent"].slug}
    # 403, or 400 "does not exist" when the agent is no longer visible to the user at all.
    assert api(user).post("/api/v1/versions/", body, format="json").status_code in (400, 403)
    assert world["agent"].versions.count() == count
    assert not request_button(user, world["draft"])


# --- the Publisher's verbs: publish (page shows it, API does it), then retire ---------------------


def publish_button(user, version, verb):
    response = page(user).get(f"/governance/versions/{version.pk}/")
    return response.status_code == 200 and f'id="verb-{verb}"' in response.content.decode()


def publishes(user, world):
    version = world["passed"]
    assert publish_button(user, version, "publish")
    answer = api(user).post(f"/api/v1/versions/{version.pk}/publish/", {"reason": REASON})
    assert answer.status_code == 200, answer.content
    version.refresh_from_db()
    assert version.state == VersionState.PUBLISHED
    assert publish_button(user, version, "retire")


def cannot_publish(user, world):
    version = world["passed"]
    assert not publish_button(user, version, "retire")
    answer = api(user).post(f"/api/v1/versions/{version.pk}/retire/", {"reason": REASON})
    assert answer.status_code in (403, 404)
    version.refresh_from_db()
    assert version.state == VersionState.PUBLISHED


# --- the Admin's own: read the role grants (API), the People page, bypass right -----------


def administers(user, world, scope):
    if scope == "global":
        assert api(user).get("/api/v1/role-grants/").status_code == 200
        assert page(user).get(f"/people/{user.pk}/").status_code == 200
    elif scope == "agent":
        assert fresh(user).has_perm("agents.bypass_agent", world["agent"])


def cannot_administer(user, world):
    assert api(user).get("/api/v1/role-grants/").status_code == 403
    roles_page = page(user).get(f"/people/{user.pk}/")
    assert roles_page.status_code == 403 or no_admin(roles_page)
    assert not fresh(user).has_perm("agents.bypass_agent", world["agent"])
    assert not fresh(user).has_perm("agents.bypass_agent")


# What each grant lets its holder do: an Admin of an agent holds its Builder and Publisher verbs,
# an Admin of a dataset its Editor verbs, a global Admin everything.
USES = {
    "Editor": ["edit"],
    "Builder": ["build"],
    "Publisher": ["publish"],
    "Admin": ["edit", "build", "publish", "administer"],
}
APPLIES = {"edit": ("global", "dataset"), "build": ("global", "agent")}
APPLIES["publish"] = APPLIES["build"]
APPLIES["administer"] = ("global", "agent", "dataset")


@pytest.mark.parametrize("role,scope", WALK, ids=[f"{r}-{s}" for r, s in WALK])
def test_a_grant_is_used_then_revoked_and_its_rights_are_gone(
    role, scope, world, admin_user, tmp_path
):
    user = factories.user("walker")
    target = {
        "global": {},
        "agent": {"agent": "support-bot"},
        "dataset": {"dataset": "gate-basics"},
    }
    body = {"user": "walker", "role": role, **target[scope], "reason": "the walk"}
    admin = factories.api(admin_user)

    granted = admin.post("/api/v1/role-grants/", body, format="json")
    assert granted.status_code == 201, granted.content
    entry = AuditEntry.objects.filter(action="governance.role.grant").latest("sequence")
    assert entry.target_id == str(user.pk) and entry.after["role"] == role
    listed = admin.get("/api/v1/role-grants/", {"user": "walker"}).json()["results"]
    assert [(g["role"], g["scope"]) for g in listed] == [(role, scope)]

    uses = [use for use in USES[role] if scope in APPLIES[use]]
    for use in uses:
        if use == "edit":
            edits(user, world, tmp_path)
        elif use == "build":
            builds(user, world)
        elif use == "publish":
            publishes(user, world)
        else:
            administers(user, world, scope)

    revoked = admin.post("/api/v1/role-grants/revoke/", body, format="json")
    assert revoked.status_code == 200, revoked.content
    entry = AuditEntry.objects.filter(action="governance.role.revoke").latest("sequence")
    obj = {"global": None, "agent": world["agent"], "dataset": world["dataset"]}[scope]
    expected = sorted(OBJECT_PERMS[role][scope]) if obj is not None else []
    removed = {"perms_removed": expected} if obj is not None else {"groups_removed": [role]}
    assert entry.target_id == str(user.pk) and entry.after == removed
    if obj is not None:
        assert not get_user_perms(user, obj).exists()
    assert not fresh(user).groups.exists()
    assert admin.get("/api/v1/role-grants/", {"user": "walker"}).json()["results"] == []

    for use in uses:
        if use == "edit":
            cannot_edit(user, world, tmp_path)
        elif use == "build":
            cannot_build(user, world)
        elif use == "publish":
            cannot_publish(user, world)
        else:
            cannot_administer(user, world)

    again = admin.post("/api/v1/role-grants/revoke/", body, format="json")
    assert (again.status_code, again.json()["code"]) == (409, "not_held")
