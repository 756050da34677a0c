"""The bypass: Admins only, a substantive reason, bound to one decision
and config hash, single use, expiring, a second Admin when the policy says so, never under a
hard policy; every step and every refusal audited."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.choices import VersionState
from agents.models import AgentVersion, config_hash
from governance.actions.approve_bypass import ApproveBypass
from governance.actions.deny_bypass import DenyBypass
from governance.actions.publish_version import PublishVersion
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.actions.retire_version import RetireVersion
from governance.actions.revoke_bypass import RevokeBypass
from governance.choices import BypassState, Enforcement, RequestState
from governance.models import AuditEntry, Bypass, PublishRequest
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid
from tests.support import factories
from tests.support.governance import REASON


def actions_in_order(target):
    return list(
        AuditEntry.objects.filter(target_type="governance.bypass", target_id=str(target.pk))
        .order_by("sequence")
        .values_list("action", flat=True)
    )


def set_policy(policy, **fields):
    for name, value in fields.items():
        setattr(policy, name, value)
    policy.save(update_fields=list(fields))


@pytest.fixture
def second_admin(db):
    return factories.user("second-admin", role="Admin")


@pytest.mark.parametrize("who", ["publisher", "builder"])
def test_a_publishers_and_a_builders_bypass_attempts_are_refused_and_audited(
    who, request, blocked_request
):
    user = request.getfixturevalue(who)
    with pytest.raises(ActionDenied):
        RequestBypass(acting_user=user, publish_request=blocked_request, reason=REASON).execute()
    assert not Bypass.objects.exists()
    refusal = AuditEntry.objects.get(action="governance.bypass.refused")
    assert refusal.actor_id == user.pk
    assert refusal.target_id == str(blocked_request.pk)
    assert refusal.after == {"verb": "request", "code": "bypass_denied"}
    assert "Only an Admin" in refusal.reason


@pytest.mark.parametrize(
    "reason",
    [
        "",
        "urgent fix",
        " " * 40,
        "a" * 40,
        "asdf asdf asdf asdf asdf asdf asdf asdf",
        "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!",
    ],
)
def test_a_bypass_needs_a_substantive_reason(reason, admin_user, blocked_request):
    with pytest.raises(ActionInvalid) as refused:
        RequestBypass(
            acting_user=admin_user, publish_request=blocked_request, reason=reason
        ).execute()
    assert refused.value.field == "reason"
    assert not Bypass.objects.exists()
    refusal = AuditEntry.objects.get(action="governance.bypass.refused")
    assert refusal.after == {"verb": "request", "code": "invalid"}


def test_an_admin_bypass_is_bound_to_the_decision_and_the_config_hash(
    admin_user, blocked_request, bad_version
):
    bypass = RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()
    assert bypass.decision == blocked_request.decision
    assert bypass.config_hash == bad_version.config_hash
    assert timedelta(hours=71) < bypass.expires_at - timezone.now() <= timedelta(hours=72)
    assert actions_in_order(bypass) == ["governance.bypass.request", "governance.bypass.approve"]


def test_a_bypassed_version_is_published_and_the_bypass_used_once(
    publisher, approved_bypass, bad_version, blocked_request
):
    PublishVersion(acting_user=publisher, agent_version=bad_version).execute()
    approved_bypass.refresh_from_db()
    blocked_request.refresh_from_db()
    bad_version.refresh_from_db()
    assert bad_version.state == VersionState.PUBLISHED
    assert approved_bypass.state == BypassState.USED and approved_bypass.used_at
    assert blocked_request.state == RequestState.BYPASSED
    publish = AuditEntry.objects.get(action="governance.version.publish")
    assert publish.after["cleared_by"] == "bypass"
    assert publish.after["bypass"] == approved_bypass.pk
    assert actions_in_order(approved_bypass)[-1] == "governance.bypass.use"


def test_a_used_bypass_cannot_be_used_again(
    publisher, admin_user, approved_bypass, bad_version, blocked_request
):
    PublishVersion(acting_user=publisher, agent_version=bad_version).execute()
    RetireVersion(acting_user=publisher, agent_version=bad_version).execute()
    # Put the request back to `blocked`, as if the same decision were offered again: the used
    # bypass still may not carry a second publication.
    PublishRequest.objects.filter(pk=blocked_request.pk).update(state=RequestState.BLOCKED)
    AgentVersion.objects.filter(pk=bad_version.pk).update(state=VersionState.DRAFT)
    with pytest.raises(ActionConflict) as refused:
        PublishVersion(acting_user=publisher, agent_version=bad_version).execute()
    assert refused.value.code == "blocked"
    with pytest.raises(ActionConflict):
        RevokeBypass(acting_user=admin_user, bypass=approved_bypass).execute()
    assert AuditEntry.objects.filter(action="governance.bypass.use").count() == 1


def test_an_expired_bypass_cannot_be_used_and_becomes_expired_when_touched(
    publisher, approved_bypass, bad_version
):
    Bypass.objects.filter(pk=approved_bypass.pk).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    with pytest.raises(ActionConflict) as refused:
        PublishVersion(acting_user=publisher, agent_version=bad_version).execute()
    assert refused.value.code == "blocked"
    approved_bypass.refresh_from_db()
    bad_version.refresh_from_db()
    assert approved_bypass.state == BypassState.EXPIRED
    assert bad_version.state == VersionState.DRAFT
    expire = AuditEntry.objects.get(action="governance.bypass.expire")
    assert expire.actor_id is None and expire.before == {"state": "approved"}
    assert AuditEntry.objects.filter(action="governance.version.refused").exists()


def test_the_bypass_expiry_follows_the_policy(admin_user, policy, blocked_request):
    set_policy(policy, bypass_expiry_hours=2)
    bypass = RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()
    assert bypass.expires_at - bypass.created_at < timedelta(hours=2, seconds=1)


def test_a_bypass_is_void_once_the_decision_changed(publisher, approved_bypass, bad_version):
    changed = {**approved_bypass.decision, "decided_at": "2000-01-01T00:00:00+00:00"}
    PublishRequest.objects.filter(pk=approved_bypass.publish_request_id).update(decision=changed)
    with pytest.raises(ActionConflict) as refused:
        PublishVersion(acting_user=publisher, agent_version=bad_version).execute()
    assert refused.value.code == "bypass_void"


def test_a_bypass_is_void_once_the_version_config_changed(
    second_admin, admin_user, policy, blocked_request, bad_version
):
    set_policy(policy, bypass_requires_second_admin=True)
    bypass = RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()
    config = {"callable": "tests.support.agents_under_test.echo"}
    AgentVersion.objects.filter(pk=bad_version.pk).update(
        config=config, config_hash=config_hash("python", config)
    )
    with pytest.raises(ActionConflict) as refused:
        ApproveBypass(acting_user=second_admin, bypass=bypass).execute()
    assert refused.value.code == "bypass_void"


def test_a_second_different_admin_must_approve_when_the_policy_says_so(
    admin_user, second_admin, publisher, policy, blocked_request, bad_version
):
    set_policy(policy, bypass_requires_second_admin=True)
    bypass = RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()
    assert bypass.state == BypassState.REQUESTED
    with pytest.raises(ActionConflict):  # not approved yet
        PublishVersion(acting_user=publisher, agent_version=bad_version).execute()
    with pytest.raises(ActionDenied) as refused:
        ApproveBypass(acting_user=admin_user, bypass=bypass).execute()
    assert refused.value.code == "same_admin"
    ApproveBypass(acting_user=second_admin, bypass=bypass).execute()
    PublishVersion(acting_user=publisher, agent_version=bad_version).execute()
    bypass.refresh_from_db()
    assert bypass.approved_by == second_admin and bypass.state == BypassState.USED
    assert actions_in_order(bypass) == [
        "governance.bypass.request",
        "governance.bypass.refused",
        "governance.bypass.approve",
        "governance.bypass.use",
    ]


def test_a_denied_bypass_cannot_be_used(
    admin_user, second_admin, publisher, policy, blocked_request, bad_version
):
    set_policy(policy, bypass_requires_second_admin=True)
    bypass = RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()
    DenyBypass(acting_user=second_admin, bypass=bypass, reason="use the hotfix branch").execute()
    with pytest.raises(ActionConflict):
        ApproveBypass(acting_user=second_admin, bypass=bypass).execute()
    with pytest.raises(ActionConflict):
        PublishVersion(acting_user=publisher, agent_version=bad_version).execute()
    bypass.refresh_from_db()
    assert bypass.state == BypassState.DENIED


def test_a_revoked_bypass_cannot_be_used(admin_user, publisher, approved_bypass, bad_version):
    RevokeBypass(acting_user=admin_user, bypass=approved_bypass, reason="fixed properly").execute()
    with pytest.raises(ActionConflict):
        PublishVersion(acting_user=publisher, agent_version=bad_version).execute()
    assert actions_in_order(approved_bypass)[-1] == "governance.bypass.revoke"


def test_a_hard_policy_cannot_be_bypassed(admin_user, policy, blocked_request):
    set_policy(policy, enforcement=Enforcement.HARD)
    with pytest.raises(ActionConflict) as refused:
        RequestBypass(
            acting_user=admin_user, publish_request=blocked_request, reason=REASON
        ).execute()
    assert refused.value.code == "hard_policy"
    assert AuditEntry.objects.get(action="governance.bypass.refused").after["code"] == "hard_policy"


def test_an_advisory_policy_needs_no_bypass(admin_user, policy, blocked_request):
    set_policy(policy, enforcement=Enforcement.ADVISORY)
    with pytest.raises(ActionConflict) as refused:
        RequestBypass(
            acting_user=admin_user, publish_request=blocked_request, reason=REASON
        ).execute()
    assert refused.value.code == "advisory_policy"


def test_a_passed_decision_has_nothing_to_bypass(admin_user, passed_request):
    with pytest.raises(ActionConflict) as refused:
        RequestBypass(
            acting_user=admin_user, publish_request=passed_request, reason=REASON
        ).execute()
    assert refused.value.code == "not_blocked"


def test_one_decision_has_one_live_bypass_at_a_time(admin_user, approved_bypass, blocked_request):
    with pytest.raises(ActionConflict) as refused:
        RequestBypass(
            acting_user=admin_user, publish_request=blocked_request, reason=REASON
        ).execute()
    assert refused.value.code == "already_requested"


def test_requesting_publication_again_revokes_the_earlier_bypass(
    author, approved_bypass, bad_version
):
    RequestPublication(
        acting_user=author, agent_version=bad_version, supersede=approved_bypass.publish_request_id
    ).execute()
    approved_bypass.refresh_from_db()
    assert approved_bypass.state == BypassState.REVOKED
    assert actions_in_order(approved_bypass)[-1] == "governance.bypass.revoke"
