"""Webhooks in the admin, in chromium: an Admin registers an endpoint (URL and events ticked),
reads its secret on the change page, and after a delivery (sent here by the task itself to a
loopback receiver, answering 500, then 200 to the retry django-q2's scheduler runs) reads both
attempts in the delivery log.
Screenshots: `webhook-add`, `webhook-change`, `webhook-deliveries`.
"""

import pytest

from governance import webhooks
from governance.models import WebhookEndpoint
from tests.support import factories
from tests.support.browser import log_in
from tests.support.loopback_webhook import LoopbackReceiver, run_retries

pytestmark = [pytest.mark.slow]


def test_an_admin_registers_a_webhook_and_reads_its_deliveries(
    server, browser, shot, live_db, settings
):
    settings.SHERLOCK_WEBHOOK_BACKOFF_MS = 10
    factories.user("admin", role="Admin")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    with LoopbackReceiver(statuses=[500, 200]) as receiver:
        log_in(page, server, "admin", next_url="/admin/governance/webhookendpoint/add/")
        page.wait_for_selector("#id_url")
        page.fill("#id_url", receiver.url)
        page.check("input[name=events][value='run.finished']")
        page.check("input[name=events][value='version.published']")
        shot(page, "webhook-add")
        page.click("input[name=_continue]")
        page.wait_for_selector(".messagelist")
        assert "was added successfully" in page.inner_text(".messagelist")
        assert receiver.url in page.inner_text(".messagelist")
        endpoint = WebhookEndpoint.objects.get()
        assert endpoint.events == ["run.finished", "version.published"]
        assert endpoint.secret in page.inner_text("#content")
        shot(page, "webhook-change")

        body = '{"data":{"run":1},"event":"run.finished"}'
        assert not webhooks.deliver(
            endpoint.pk, "run.finished", "0" * 8 + "-0000-4000-8000-" + "0" * 12, body
        )
        assert len(run_retries()) == 1
    assert len(receiver.received) == 2
    page.goto(f"{server}/admin/governance/webhookdelivery/")
    table = page.inner_text("#result_list")
    assert "500" in table and "200" in table and "run.finished" in table
    shot(page, "webhook-deliveries")
