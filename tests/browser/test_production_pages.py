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


def test_metrics_sessions_and_what_is_not_measured_as_a_person_reads_them(
    server, browser, shot, live_db
):
    """The production page draws its charts (uPlot, from the embedded figures) and says what
    production does not measure; the traces page searches and links a session; the session
    page reads the conversation in order. Screenshots: `production-metrics`,
    `traces-filtered`, `session-page`."""
    from datetime import timedelta

    from django.utils import timezone

    from production.actions.create_online_rule import CreateOnlineRule

    builder = factories.user("builder", role="Builder")
    agent = factories.agent("support-bot")
    version = factories.agent_version(agent, number=1)
    agent.live_version = version
    agent.save(update_fields=["live_version"])
    CreateOnlineRule(
        acting_user=builder,
        agent=agent,
        checks=[{"label": "shape", "kind": "output_type", "params": {"type": "text"}}],
    ).execute()
    now = timezone.now()
    rows = []
    for n in range(24):
        at = now - timedelta(hours=n % 12, minutes=n)
        row = online.trace(
            agent,
            version,
            {"input": f"Question {n}?", "output": f"Answer {n}."},
            completed_at=at,
        )
        row.received_at = row.first_span_at = at
        row.latency_ms = 200.0 + 37 * n
        row.input_tokens, row.output_tokens = 120, 30 + n
        row.cost_usd = Decimal("0.0004")
        row.has_error = n % 7 == 0
        row.session = "chat-7" if n < 3 else f"chat-{n + 100}"
        row.end_user = "ana"
        row.save()
        rows.append(row)
    scoring.score_traces([row.pk for row in rows])

    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    log_in(page, server, "builder", f"/production/agents/{agent.slug}/")
    page.wait_for_selector("#chart-latency .uplot")
    assert page.locator("#metrics canvas").count() >= 5
    assert (
        "nothing measured" in page.inner_text("#chart-checks")
        or page.locator("#chart-checks .uplot").count()
    )
    assert "false success: not measured" in page.inner_text("#not-measured")
    shot(page, "production-metrics")

    page.goto(f"{server}/production/traces/?q=Question+1")
    assert "Question 12?" in page.inner_text("#traces")
    assert "Question 2?" not in page.inner_text("#traces")
    page.goto(f"{server}/production/traces/?session=chat-7")
    shot(page, "traces-filtered")
    page.click("#traces a:has-text('chat-7')")
    page.wait_for_selector("#turns")
    turns = page.inner_text("#turns")
    assert turns.index("Question 2?") < turns.index("Question 1?") < turns.index("Question 0?")
    assert "turns\n3" in page.inner_text("#session-totals")
    shot(page, "session-page")
