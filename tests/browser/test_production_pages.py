"""Production in chromium: a Builder writes the online rule on its page (a bad field comes
back on its field), traces are scored, a breach opens a proposal, and a Publisher dismisses it
on the production page. Screenshots: `online-rule-error`, `production-breach`,
`production-dismissed`, `trace-money`, `online-rule-library-scoped` (SHERLOCK_SCREENSHOTS keeps
them)."""

from decimal import Decimal

import pytest

from governance.models import PublishingPolicy
from production.choices import ProposalState
from production.models import RollbackProposal
from production.online import scoring
from tests.support import factories, online
from tests.support.browser import log_in
from tests.support.governance import REASON, TOOLS_CHECK, tool_case

expect = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed").expect

pytestmark = [pytest.mark.slow]


def refund_in_output(context, **_):
    return "refund" in (context["transcript"].get("output") or "")


def test_a_breach_is_seen_and_dismissed_on_the_production_page(
    server, browser, shot, live_db, settings
):
    settings.SHERLOCK_VERIFIER_CALLABLES = ["tests.browser.test_production_pages."]
    admin = factories.user("boss", role="Admin")
    gate = factories.dataset("gate-basics")
    factories.dataset_version(gate, cases=[tool_case("a", "?")], checks=[TOOLS_CHECK])
    # Report only: on a live database the gate runs really run (the echo agent bills nothing,
    # so coverage blocks them), and these pages are about what production shows after.
    PublishingPolicy.objects.create(
        name="Default", created_by=admin, enforcement="advisory"
    ).gate_datasets.add(gate)
    builder = factories.user("builder", role="Builder")
    publisher = factories.user("publisher", role="Publisher")
    agent = factories.agent("refund-agent")
    previous, live = online.live_after(agent, builder, publisher)

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "builder", f"/production/agents/{agent.slug}/online-rule/")
    page.fill("#id_checks", '[{"label": "shape", "kind": "output_type", "params": {}}]')
    page.click("#online-rule button")
    page.wait_for_selector(".field-error")
    assert "type" in page.inner_text("#online-rule")
    shot(page, "online-rule-error")
    page.fill(
        "#id_checks", '[{"label": "shape", "kind": "output_type", "params": {"type": "text"}}]'
    )
    page.click("#online-rule button")
    page.wait_for_selector("text=Online rule saved")
    # The rule's outcome verifier is a callable the operator lists (settings, not the page).
    rule = agent.online_rule
    rule.outcome_check = {"kind": "python", "callable": f"{__name__}.refund_in_output"}
    rule.save(update_fields=["outcome_check"])
    done = {"input": "Refund A-1", "output": "refund sent", "declared_complete": True}
    lie = {"input": "Refund A-2", "output": "all done!", "declared_complete": True}
    rows = [online.trace(agent, live, lie) for _ in range(6)]
    rows += [online.trace(agent, live, done) for _ in range(30)]
    scoring.score_traces([row.pk for row in rows])
    assert RollbackProposal.objects.get().state == ProposalState.OPEN

    publisher_page = browser.new_page(viewport={"width": 1280, "height": 1000})
    log_in(publisher_page, server, "publisher", f"/production/agents/{agent.slug}/")
    publisher_page.wait_for_selector("#proposal")
    text = publisher_page.inner_text("#proposal")
    assert "v2 → v1" in text and "false success 6/36" in text
    assert "breach" in publisher_page.inner_text("#production-contract")
    shot(publisher_page, "production-breach")
    publisher_page.fill("#proposal textarea", REASON)
    publisher_page.click("#proposal button >> text=Dismiss")
    publisher_page.wait_for_selector("text=dismissed")
    assert RollbackProposal.objects.get().state == ProposalState.DISMISSED
    shot(publisher_page, "production-dismissed")
    # Money from the one formatter: the day's judge spend and cap, a trace's cost grouped.
    assert "of a $1.00 cap" in publisher_page.inner_text("body")
    rows[0].cost_usd = Decimal("1234.5")
    rows[0].save(update_fields=["cost_usd"])
    publisher_page.goto(f"{server}/production/traces/{rows[0].pk}/")
    assert "$1,234.50" in publisher_page.inner_text("body")
    shot(publisher_page, "trace-money")
    assert previous.pk != live.pk


def test_a_builder_picks_only_the_checks_of_datasets_they_may_see(server, browser, shot, live_db):
    from tests.support.governance import grant_on

    agent = factories.agent("scoped-agent")
    shared = factories.dataset_version(factories.dataset("shared-evals"), checks=[TOOLS_CHECK])
    factories.dataset_version(factories.dataset("secret-evals"), checks=[TOOLS_CHECK])
    user = factories.user("scoped")
    grant_on(user, "Builder", agent)
    grant_on(user, "Editor", shared.dataset)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "scoped", f"/production/agents/{agent.slug}/online-rule/")
    page.wait_for_selector("#id_library_version + .select2")
    page.click("#id_library_version + .select2 .select2-selection")
    page.fill(".select2-container--open .select2-search__field", "evals")
    offered = page.locator(".select2-results__option:has-text('evals')")
    expect(offered).to_have_text(["shared-evals v1"])  # never secret-evals: not the scoped's
    offered.click()
    page.fill("#id_library_labels", TOOLS_CHECK["label"])
    shot(page, "online-rule-library-scoped")
    page.click("#online-rule button")
    page.wait_for_selector("text=Online rule saved")
    assert agent.online_rule.library_version == shared
