"""A pending bypass says what it waits for (a second Admin's approval) and who may give it,
on the publish page; with no eligible Admin, it points at the order that works with
one seeded Admin (docs/governance.md)."""

import pytest

from governance.actions.grant_role import GrantRole
from governance.publishing.bypass_rules import who_may_approve
from tests.support import factories

pytestmark = pytest.mark.django_db


def waiting(client, user, bypass):
    client.force_login(user)
    version = bypass.publish_request.agent_version
    response = client.get(f"/governance/versions/{version.pk}/")
    return response.context["waiting"]


def test_a_pending_bypass_says_it_waits_for_a_second_admin_and_names_them(
    client, admin_user, pending_bypass
):
    factories.user("zoe", role="Admin")  # her rights were not granted by the requester
    text = waiting(client, admin_user, pending_bypass)
    assert f"bypass #{pending_bypass.pk}, requested by admin, waits for a second Admin's" in text
    assert "an Admin other than admin, whose Admin role admin did not grant" in text
    assert "who may approve it now: zoe" in text


def test_an_admin_the_requester_made_is_not_named(client, admin_user, pending_bypass):
    made = factories.user("made")
    GrantRole(acting_user=admin_user, user=made, role="Admin", reason="second admin").execute()
    policy = pending_bypass.publish_request.policy
    agent = pending_bypass.publish_request.agent_version.agent
    assert who_may_approve(pending_bypass, agent, policy) == []
    text = waiting(client, admin_user, pending_bypass)
    assert "no Admin may approve it now" in text
    assert '"Bypass with one seeded Admin"' in text


def test_the_policys_role_age_is_said(client, admin_user, pending_bypass):
    policy = pending_bypass.publish_request.policy
    policy.bypass_approver_min_role_age_hours = 24
    policy.save(update_fields=["bypass_approver_min_role_age_hours"])
    text = waiting(client, admin_user, pending_bypass)
    assert "and is at least 24 hours old" in text


def test_the_page_shows_it_to_a_publisher_too(client, publisher, admin_user, pending_bypass):
    body_text = waiting(client, publisher, pending_bypass)
    assert "waits for a second Admin's approval" in body_text


def test_the_documented_order_with_one_seeded_admin_works(admin_user, blocked_request, policy):
    """docs/governance.md, "Bypass with one seeded Admin": the seeded Admin grants a second,
    the second requests, the seeded one approves; the other way round is refused."""
    from governance.actions.approve_bypass import ApproveBypass
    from governance.actions.request_bypass import RequestBypass
    from governance.actions.revoke_bypass import RevokeBypass
    from governance.choices import BypassState
    from sherlock.core.errors import ActionDenied
    from tests.support.governance import REASON

    policy.bypass_requires_second_admin = True
    policy.save(update_fields=["bypass_requires_second_admin"])
    second = factories.user("admin2")
    GrantRole(acting_user=admin_user, user=second, role="Admin", reason="second admin").execute()
    second = type(second).objects.get(pk=second.pk)
    theirs = RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()
    with pytest.raises(ActionDenied) as refused:
        ApproveBypass(acting_user=second, bypass=theirs).execute()
    assert refused.value.code == "approver_not_independent"
    RevokeBypass(acting_user=admin_user, bypass=theirs).execute()  # one open bypass at a time
    mine = RequestBypass(acting_user=second, publish_request=blocked_request, reason=REASON)
    mine = mine.execute()
    ApproveBypass(acting_user=admin_user, bypass=mine).execute()
    mine.refresh_from_db()
    assert mine.state == BypassState.APPROVED
