"""Migration 0011 turns the rights held before grants were records into grants, reading
overlapping verb sets as documented in docs/governance.md: the audit log first, else the fewest
whole roles; it says what it found."""

import importlib
import io

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from guardian.shortcuts import assign_perm, get_user_perms

from governance.models import RoleGrant
from governance.people.roles import OBJECT_PERMS
from sherlock.core.audit import audit
from tests.support import factories

migration = importlib.import_module("governance.migrations.0011_role_grants_from_rights")


@pytest.fixture
def boss(db):
    """The Admin of the old log entries (a raw membership, as before grants were records)."""
    user = factories.user("boss")
    user.groups.add(Group.objects.get(name="Admin"))
    return user


def held(user, role, obj):
    for codename in OBJECT_PERMS[role][obj._meta.model_name]:
        assign_perm(codename, user, obj)


def scope_of(obj):
    return {"type": f"{obj._meta.app_label}.{obj._meta.model_name}", "id": obj.pk, "repr": str(obj)}


def migrate():
    out = io.StringIO()
    line = migration.record_grants(apps, None, out=out)
    grants = sorted(
        (g.user.username, g.role, g.scope, str(g.agent or g.dataset or ""))
        for g in RoleGrant.objects.select_related("user", "agent", "dataset")
    )
    return grants, line, out.getvalue()


def test_a_group_membership_is_a_global_grant(boss):
    grants, line, out = migrate()
    assert grants == [("boss", "Admin", "global", "")]
    assert "1 global, 0 on agents, 0 on datasets" in line and line in out


def test_a_full_admin_set_on_an_agent_is_one_admin_grant_not_three(boss, agent):
    user = factories.user("owner")
    held(user, "Admin", agent)
    grants, _, _ = migrate()
    assert ("owner", "Admin", "agent", "support-bot") in grants
    assert not [g for g in grants if g[0] == "owner" and g[1] != "Admin"]


def test_builder_and_publisher_verbs_are_two_grants(boss, agent):
    user = factories.user("both")
    held(user, "Builder", agent)
    held(user, "Publisher", agent)
    grants, _, _ = migrate()
    assert [g for g in grants if g[0] == "both"] == [
        ("both", "Builder", "agent", "support-bot"),
        ("both", "Publisher", "agent", "support-bot"),
    ]


def test_an_editors_verbs_on_a_dataset_are_an_editor_not_an_admin(boss, gate_dataset):
    user = factories.user("ed")
    held(user, "Editor", gate_dataset)
    grants, _, _ = migrate()
    assert [g for g in grants if g[0] == "ed"] == [("ed", "Editor", "dataset", "gate-basics")]


def test_the_audit_log_names_an_admin_of_a_dataset(boss, gate_dataset):
    user = factories.user("dadm")
    held(user, "Admin", gate_dataset)
    after = {"role": "Admin", "scope": scope_of(gate_dataset), "perms": []}
    audit("governance.role.grant", actor=boss, target=user, after=after, reason="runs it")
    migrate()
    grant = RoleGrant.objects.get(user=user)
    assert (grant.role, grant.granted_by, grant.reason) == ("Admin", boss, "runs it")


def test_a_logged_revocation_whose_verbs_stayed_is_carried_out(boss, gate_dataset):
    """The defect found in review: revoking an Editor of a dataset left every verb in place."""
    user = factories.user("revoked")
    held(user, "Editor", gate_dataset)
    scope = scope_of(gate_dataset)
    audit(
        "governance.role.grant", actor=boss, target=user, after={"role": "Editor", "scope": scope}
    )
    audit(
        "governance.role.revoke", actor=boss, target=user, before={"role": "Editor", "scope": scope}
    )
    grants, line, _ = migrate()
    assert not [g for g in grants if g[0] == "revoked"]
    assert not get_user_perms(user, gate_dataset).exists()
    assert "3 permissions removed" in line


def test_a_logged_grant_keeps_the_verbs_a_shell_gave_beside_it(boss, agent):
    """Only a replayed revocation removes verbs: a logged Builder grant says nothing about the
    Publisher verbs given from a shell, which are read by the fewest-whole-roles rule."""
    user = factories.user("dev")
    held(user, "Builder", agent)
    held(user, "Publisher", agent)
    after = {"role": "Builder", "scope": scope_of(agent), "perms": []}
    audit("governance.role.grant", actor=boss, target=user, after=after, reason="builds it")
    grants, line, out = migrate()
    assert [g for g in grants if g[0] == "dev"] == [
        ("dev", "Builder", "agent", "support-bot"),
        ("dev", "Publisher", "agent", "support-bot"),
    ]
    assert "publish_agent" in get_user_perms(user, agent)
    assert "0 permissions removed" in line
    assert "dev, agent support-bot: recorded Builder (log), Publisher (no log)" in out


def test_verbs_that_no_grant_explains_are_removed_and_named(boss, agent):
    """A right `GET /role-grants/` would not show is not kept: a Publisher's set plus a
    Builder's `build_agent` is a Publisher, and `build_agent` goes; a lone `view_agent` and a
    stray `bypass_agent` go too. Each user and object is named in the output."""
    from sherlock.core.permissions import user_can

    publisher = factories.user("pub")
    for codename in ("view_agent", "publish_agent", "build_agent"):
        assign_perm(codename, publisher, agent)
    viewer = factories.user("partial")
    assign_perm("agents.view_agent", viewer, agent)
    assign_perm("agents.bypass_agent", viewer, agent)
    grants, line, out = migrate()
    assert [g for g in grants if g[0] in ("pub", "partial")] == [
        ("pub", "Publisher", "agent", "support-bot")
    ]
    assert sorted(get_user_perms(publisher, agent)) == ["publish_agent", "view_agent"]
    assert not user_can(publisher, "build", agent)
    assert not get_user_perms(viewer, agent).exists()
    assert "3 permissions removed that no grant explains, from 2 user-object" in line
    assert "pub, agent support-bot: recorded Publisher (no log); removed build_agent" in out
    assert "partial, agent support-bot: removed bypass_agent, view_agent" in out


def test_the_lines_per_user_are_bounded(boss, agent):
    for n in range(55):
        assign_perm("agents.view_agent", factories.user(f"u{n:02}"), agent)
    _, line, out = migrate()
    lines = out.splitlines()
    # boss's global grant and 49 of the 55 users, the count of the rest, the summary
    assert len(lines) == 52 and lines[-2] == "  ... and 6 more users and objects."
    assert lines[-1] == f"  {line}"


def test_an_empty_database_migrates_quietly(db):
    _, _, out = migrate()
    assert out == ""
