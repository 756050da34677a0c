"""Who may do what, through the actions: every role granted globally, for this agent (or the
gate dataset) only, for another one only, and an outsider. Each allowed call
leaves the state change and its audit entry; each refused one leaves the state as it was and a
`governance.<noun>.refused` entry. The API and the admin matrices are in test_api_governance.py
and test_admin_governance.py."""

import pytest

from agents.choices import VersionState
from governance.actions.approve_bypass import ApproveBypass
from governance.actions.create_policy import CreatePolicy
from governance.actions.deny_bypass import DenyBypass
from governance.actions.grant_role import GrantRole
from governance.actions.publish_version import PublishVersion
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.actions.retire_version import RetireVersion
from governance.actions.revoke_bypass import RevokeBypass
from governance.actions.revoke_role import RevokeRole
from governance.actions.rollback_version import RollBackVersion
from governance.actions.update_policy import UpdatePolicy
from governance.choices import BypassState, RequestState
from governance.models import AuditEntry, PublishingPolicy
from sherlock.core.errors import ActionDenied
from tests.support import factories
from tests.support.governance import (
    ADMINS,
    BUILDERS,
    GLOBAL_ADMINS,
    PUBLISHERS,
    REASON,
    finish_gate_runs,
    persona_id,
    split,
)


def personas(allowed):
    yes, no = split(allowed)
    return (
        pytest.mark.parametrize("role,scope", yes, ids=persona_id),
        pytest.mark.parametrize("role,scope", no, ids=persona_id),
    )


def last(action):
    return AuditEntry.objects.filter(action=action).order_by("-sequence").first()


def assert_refused(user, noun, verb):
    entry = last(f"governance.{noun}.refused")
    assert entry is not None and entry.actor_id == user.pk
    assert entry.after["verb"] == verb


# --- request publication -----------------------------------------------------------------------

may_request, may_not_request = personas(BUILDERS)


@may_request
def test_builders_and_admins_may_request_publication(role, scope, persona, good_version, policy):
    user = persona(role, scope)
    request = RequestPublication(acting_user=user, agent_version=good_version).execute()
    assert request.state == RequestState.EVALUATING and request.runs.count() == 1
    assert last("governance.request.create").target_id == str(request.pk)


@may_not_request
def test_others_may_not_request_publication(role, scope, persona, good_version, policy):
    user = persona(role, scope)
    with pytest.raises(ActionDenied):
        RequestPublication(acting_user=user, agent_version=good_version).execute()
    assert not good_version.publish_requests.exists()
    assert_refused(user, "request", "create")


# --- publish, retire, roll back -----------------------------------------------------------------

may_publish, may_not_publish = personas(PUBLISHERS)


@may_publish
def test_publishers_and_admins_may_publish_a_passed_version(
    role, scope, persona, passed_request, good_version
):
    user = persona(role, scope)
    PublishVersion(acting_user=user, agent_version=good_version).execute()
    good_version.refresh_from_db()
    assert good_version.state == VersionState.PUBLISHED
    assert good_version.agent.live_version == good_version
    entry = last("governance.version.publish")
    assert entry.actor_id == user.pk and entry.after["cleared_by"] == "passed"


@may_not_publish
def test_others_may_not_publish(role, scope, persona, passed_request, good_version):
    user = persona(role, scope)
    with pytest.raises(ActionDenied):
        PublishVersion(acting_user=user, agent_version=good_version).execute()
    good_version.refresh_from_db()
    assert good_version.state == VersionState.DRAFT
    assert_refused(user, "version", "publish")


@pytest.fixture
def live_version(passed_request, good_version, publisher):
    return PublishVersion(acting_user=publisher, agent_version=good_version).execute()


@may_publish
def test_publishers_and_admins_may_retire_the_live_version(role, scope, persona, live_version):
    user = persona(role, scope)
    RetireVersion(acting_user=user, agent_version=live_version).execute()
    live_version.refresh_from_db()
    assert live_version.state == VersionState.RETIRED
    assert live_version.agent.live_version is None
    assert last("governance.version.retire").actor_id == user.pk


@may_not_publish
def test_others_may_not_retire(role, scope, persona, live_version):
    user = persona(role, scope)
    with pytest.raises(ActionDenied):
        RetireVersion(acting_user=user, agent_version=live_version).execute()
    live_version.refresh_from_db()
    assert live_version.state == VersionState.PUBLISHED
    assert_refused(user, "version", "retire")


@pytest.fixture
def retired_and_passed_again(live_version, publisher, author):
    """The live version is retired, asked for again, and its fresh gate runs passed."""
    RetireVersion(acting_user=publisher, agent_version=live_version).execute()
    request = RequestPublication(acting_user=author, agent_version=live_version).execute()
    finish_gate_runs(request, passed=True)
    return live_version


@may_publish
def test_publishers_and_admins_may_roll_back(role, scope, persona, retired_and_passed_again):
    user = persona(role, scope)
    RollBackVersion(acting_user=user, agent_version=retired_and_passed_again).execute()
    retired_and_passed_again.refresh_from_db()
    assert retired_and_passed_again.state == VersionState.PUBLISHED
    assert last("governance.version.rollback").actor_id == user.pk


@may_not_publish
def test_others_may_not_roll_back(role, scope, persona, retired_and_passed_again):
    user = persona(role, scope)
    with pytest.raises(ActionDenied):
        RollBackVersion(acting_user=user, agent_version=retired_and_passed_again).execute()
    retired_and_passed_again.refresh_from_db()
    assert retired_and_passed_again.state == VersionState.RETIRED
    assert_refused(user, "version", "rollback")


# --- bypass ------------------------------------------------------------------------------------

may_bypass, may_not_bypass = personas(ADMINS)


@may_bypass
def test_admins_may_bypass_a_blocked_decision(role, scope, persona, blocked_request):
    user = persona(role, scope)
    bypass = RequestBypass(
        acting_user=user, publish_request=blocked_request, reason=REASON
    ).execute()
    assert bypass.state == BypassState.APPROVED
    assert last("governance.bypass.request").target_id == str(bypass.pk)


@may_not_bypass
def test_nobody_else_may_bypass_and_the_attempt_is_audited(role, scope, persona, blocked_request):
    user = persona(role, scope)
    with pytest.raises(ActionDenied):
        RequestBypass(acting_user=user, publish_request=blocked_request, reason=REASON).execute()
    assert not blocked_request.bypasses.exists()
    entry = last("governance.bypass.refused")
    assert entry.actor_id == user.pk and entry.after == {"verb": "request", "code": "bypass_denied"}


@may_bypass
def test_other_admins_may_approve_deny_and_revoke_a_bypass(role, scope, persona, pending_bypass):
    user = persona(role, scope)
    ApproveBypass(acting_user=user, bypass=pending_bypass).execute()
    RevokeBypass(acting_user=user, bypass=pending_bypass).execute()
    pending_bypass.refresh_from_db()
    assert pending_bypass.state == BypassState.REVOKED
    assert last("governance.bypass.approve").actor_id == user.pk
    assert last("governance.bypass.revoke").actor_id == user.pk


@may_bypass
def test_admins_may_deny_a_bypass(role, scope, persona, pending_bypass):
    user = persona(role, scope)
    DenyBypass(acting_user=user, bypass=pending_bypass, reason="not convinced").execute()
    pending_bypass.refresh_from_db()
    assert pending_bypass.state == BypassState.DENIED
    assert last("governance.bypass.deny").reason == "not convinced"


@may_not_bypass
@pytest.mark.parametrize("verb", [ApproveBypass, DenyBypass, RevokeBypass])
def test_nobody_else_may_approve_deny_or_revoke(role, scope, verb, persona, pending_bypass):
    user = persona(role, scope)
    with pytest.raises(ActionDenied):
        verb(acting_user=user, bypass=pending_bypass).execute()
    pending_bypass.refresh_from_db()
    assert pending_bypass.state == BypassState.REQUESTED
    assert_refused(user, "bypass", verb.verb)


# --- policies and roles: global Admins only -----------------------------------------------------

may_manage, may_not_manage = personas(GLOBAL_ADMINS)


@may_manage
def test_global_admins_may_create_and_change_policies(role, scope, persona, agent, policy):
    user = persona(role, scope)
    own = CreatePolicy(
        acting_user=user, agent=agent, name="Strict", min_case_pass_rate=0.95
    ).execute()
    changed = UpdatePolicy(acting_user=user, policy=policy, changes={"repetitions": 3}).execute()
    assert (own.version, changed.version, changed.repetitions) == (1, 2, 3)
    assert last("governance.policy.create").target_id == str(own.pk)
    assert last("governance.policy.change").target_id == str(changed.pk)


@may_not_manage
def test_nobody_else_may_manage_policies(role, scope, persona, agent, policy):
    user = persona(role, scope)
    with pytest.raises(ActionDenied):
        CreatePolicy(acting_user=user, agent=agent, name="Lax", min_case_pass_rate=0.1).execute()
    with pytest.raises(ActionDenied):
        UpdatePolicy(acting_user=user, policy=policy, changes={"min_case_pass_rate": 0}).execute()
    assert list(PublishingPolicy.objects.values_list("pk", flat=True)) == [policy.pk]
    assert_refused(user, "policy", "change")


@may_manage
def test_global_admins_may_grant_and_revoke_roles(role, scope, persona, agent):
    user = persona(role, scope)
    someone = factories.user("someone")
    GrantRole(acting_user=user, user=someone, role="Publisher", obj=agent).execute()
    assert someone.has_perm("agents.publish_agent", agent)
    RevokeRole(acting_user=user, user=someone, role="Publisher", obj=agent).execute()
    someone = type(someone).objects.get(pk=someone.pk)
    assert not someone.has_perm("agents.publish_agent", agent)
    assert last("governance.role.grant").target_id == str(someone.pk)
    assert last("governance.role.revoke").target_id == str(someone.pk)


@may_not_manage
def test_nobody_else_may_grant_roles_not_even_to_themselves(role, scope, persona, agent):
    user = persona(role, scope)
    with pytest.raises(ActionDenied):
        GrantRole(acting_user=user, user=user, role="Admin").execute()
    assert not user.groups.filter(name="Admin").exists()
    assert_refused(user, "role", "grant")
