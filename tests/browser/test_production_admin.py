"""Production in the admin, as a person uses it: an Admin finds the traces, opens one (read
only: no save, no delete), follows it to the trace's page, and reads the online rule and a
rollback proposal, each linking to the page where it is changed."""

from production.choices import ProposalState
from production.models import OnlineRule, RollbackProposal
from tests.support import factories
from tests.support.browser import log_in
from tests.support.online import trace


def test_an_admin_reads_production_in_the_admin_and_follows_it_to_its_pages(
    server, browser, shot, live_db
):
    factories.user("root-admin", role="Admin")
    agent = factories.agent("support-bot")
    version = factories.agent_version(agent)
    row = trace(agent, version, {"input": "Can I get a refund?", "output": "Yes, within 30 days."})
    OnlineRule.objects.create(agent=agent)
    RollbackProposal.objects.create(agent=agent, from_version=version, state=ProposalState.OPEN)

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "root-admin", next_url="/admin/")
    page.click("#content-main >> text=Traces")
    page.wait_for_selector("#result_list")
    assert row.trace_id in page.inner_text("#result_list")
    shot(page, "admin-production-traces")

    page.click(f"#result_list >> text={row.trace_id}")
    page.wait_for_selector("text=The trace's page")
    assert page.locator("input[type=submit][name=_save]").count() == 0  # read only
    assert page.locator("a.deletelink").count() == 0
    shot(page, "admin-production-trace")
    page.click("text=The trace's page")
    page.wait_for_url(f"**/production/traces/{row.pk}/")
    assert "Can I get a refund?" in page.inner_text("main")

    page.goto(f"{server}/admin/production/onlinerule/")
    page.click("#result_list >> text=support-bot")
    page.wait_for_selector("text=The agent's production page")
    shot(page, "admin-production-rule")
    page.goto(f"{server}/admin/production/rollbackproposal/")
    page.wait_for_selector("#result_list")
    assert "open" in page.inner_text("#result_list")
    shot(page, "admin-production-proposals")
