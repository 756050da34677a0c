"""The publish page in chromium: an Admin whose Admin role was granted by a
bypass's requester opens the page of the blocked version; instead of an Approve button they
read why they may not approve it and what the bypass waits for (naming the Admin who may give
it), and an independent Admin sees the button. Screenshot:
`publish-approver-not-independent`."""

from datetime import timedelta

import pytest
from django.utils import timezone

from governance.actions.grant_role import GrantRole
from governance.choices import BypassState, RequestState
from governance.models import Bypass, PublishingPolicy, PublishRequest
from tests.support import factories
from tests.support.browser import log_in
from tests.support.governance import REASON, make_version

pytestmark = [pytest.mark.slow]


def requested_bypass(alice):
    """A blocked decision of a fresh version, and alice's bypass of it awaiting a second Admin
    (the rows the gate and RequestBypass would have written)."""
    agent = factories.agent("support-bot")
    version = make_version(agent, factories.user("author", role="Builder"), good=False)
    policy = PublishingPolicy.objects.create(name="Default", bypass_requires_second_admin=True)
    decision = {"state": "blocked", "first_failing_gate": "false_success", "gates": []}
    request = PublishRequest.objects.create(
        agent_version=version,
        requested_by=alice,
        state=RequestState.BLOCKED,
        policy=policy,
        config_hash=version.config_hash,
        decision=decision,
        decided_at=timezone.now(),
    )
    Bypass.objects.create(
        publish_request=request,
        requested_by=alice,
        reason=REASON,
        state=BypassState.REQUESTED,
        decision=decision,
        config_hash=version.config_hash,
        expires_at=timezone.now() + timedelta(hours=72),
    )
    return version


def test_an_admin_made_by_the_requester_reads_why_they_may_not_approve(
    server, browser, shot, live_db
):
    alice = factories.user("alice", role="Admin")
    bob = factories.user("bob")
    GrantRole(acting_user=alice, user=bob, role="Admin", reason="on call").execute()
    factories.user("carol", role="Admin")
    version = requested_bypass(alice)

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    log_in(page, server, "bob", next_url=f"/governance/versions/{version.pk}/")
    page.wait_for_selector("h2 >> text=Bypasses")
    row = page.inner_text("table >> nth=-1")
    assert "You may not approve: Your Admin role was granted by the requester, alice" in row
    assert page.locator("button", has_text="approve").count() == 0
    # What it waits for, and who may give it: carol, not bob (alice made him).
    main = page.inner_text("main")
    assert "requested by alice, waits for a second Admin's approval" in main
    assert "who may approve it now: carol." in main
    shot(page, "publish-approver-not-independent")

    other = browser.new_page(viewport={"width": 1280, "height": 800})
    log_in(other, server, "carol", next_url=f"/governance/versions/{version.pk}/")
    other.wait_for_selector("h2 >> text=Bypasses")
    assert other.locator("button", has_text="approve").count() == 1
    assert "You may not approve" not in other.inner_text("main")
