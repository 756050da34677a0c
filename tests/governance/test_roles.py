"""Roles change only through GrantRole/RevokeRole (audited), and a change of rights made any
other way (a shell, a script) is audited too."""

import pytest
from django.contrib.auth.models import Group, Permission
from guardian.shortcuts import assign_perm

from governance.actions.grant_role import GrantRole
from governance.actions.revoke_role import RevokeRole
from governance.models import AuditEntry
from sherlock.core.errors import ActionConflict, ActionInvalid
from tests.support import factories


def fresh(user):
    return type(user).objects.get(pk=user.pk)


@pytest.fixture
def someone(db):
    return factories.user("someone")


def test_a_global_grant_is_membership_of_the_role_group(admin_user, someone):
    GrantRole(acting_user=admin_user, user=someone, role="Publisher", reason="on call").execute()
    assert fresh(someone).has_perm("agents.publish_agent")
    entry = AuditEntry.objects.get(action="governance.role.grant")
    assert entry.actor_id == admin_user.pk and entry.target_id == str(someone.pk)
    assert entry.after["scope"] == "global" and entry.reason == "on call"
    assert not AuditEntry.objects.filter(action="auth.membership.add", target_id=str(someone.pk))


def test_an_object_grant_holds_for_that_agent_only(admin_user, someone, agent, other_agent):
    GrantRole(acting_user=admin_user, user=someone, role="Publisher", obj=agent).execute()
    someone = fresh(someone)
    assert someone.has_perm("agents.publish_agent", agent)
    assert not someone.has_perm("agents.publish_agent", other_agent)
    assert not someone.has_perm("agents.publish_agent")
    after = AuditEntry.objects.get(action="governance.role.grant").after
    assert after["scope"] == {"type": "agents.agent", "id": agent.pk, "repr": "support-bot"}


def test_revoking_one_scoped_role_keeps_what_another_still_needs(admin_user, someone, agent):
    GrantRole(acting_user=admin_user, user=someone, role="Publisher", obj=agent).execute()
    GrantRole(acting_user=admin_user, user=someone, role="Builder", obj=agent).execute()
    RevokeRole(acting_user=admin_user, user=someone, role="Publisher", obj=agent).execute()
    someone = fresh(someone)
    assert not someone.has_perm("agents.publish_agent", agent)
    assert someone.has_perm("agents.view_agent", agent)  # the Builder grant needs it
    entry = AuditEntry.objects.get(action="governance.role.revoke")
    assert entry.after == {"perms_removed": ["publish_agent"]}


def test_an_editor_cannot_be_granted_on_an_agent(admin_user, someone, agent):
    with pytest.raises(ActionInvalid):
        GrantRole(acting_user=admin_user, user=someone, role="Editor", obj=agent).execute()


def test_a_role_held_already_or_not_held_is_a_conflict(admin_user, someone, publisher):
    with pytest.raises(ActionConflict):
        GrantRole(acting_user=admin_user, user=publisher, role="Publisher").execute()
    with pytest.raises(ActionConflict):
        RevokeRole(acting_user=admin_user, user=someone, role="Admin").execute()


def test_rights_changed_outside_the_actions_are_audited_too(someone, agent):
    someone.groups.add(Group.objects.get(name="Admin"))
    someone.user_permissions.add(Permission.objects.get(codename="bypass_agent"))
    assign_perm("agents.publish_agent", someone, agent)
    someone.is_superuser = True
    someone.save()
    audited = AuditEntry.objects.filter(target_id=str(someone.pk), target_type="auth.user")
    assert audited.get(action="auth.membership.add").after == {"groups": ["Admin"]}
    grants = audited.filter(action="auth.permission.grant").order_by("sequence")
    assert grants[0].after == {"perms": ["agents.bypass_agent"]}
    assert grants[1].after["object"] == {"type": "agents.agent", "id": str(agent.pk)}
    privileges = audited.filter(action="auth.user.privileges").latest("sequence")
    assert privileges.before["is_superuser"] is False and privileges.after["is_superuser"] is True


def test_emptying_a_role_group_by_hand_is_audited_per_member(publisher):
    Group.objects.get(name="Publisher").user_set.clear()
    removed = AuditEntry.objects.get(action="auth.membership.remove")
    assert removed.target_id == str(publisher.pk) and removed.after == {"groups": ["Publisher"]}
