"""The run and compare pages read the contract under the agent's publishing policy, in chromium.

A run that costs $0.10 per verified outcome passes the default $0.60 budget: with no policy its
page reads PASSED and says the defaults applied. Once the agent has a policy with a $0.05
budget, the same page reads FAILED at the budget gate, as the publish gate would, and names
the policy; so does the compare page, for both runs, and it names each side's thresholds when
the two agents are governed differently. Screenshots: `run-page-defaults`, `run-page-policy`,
`compare-policy`, `compare-policy-per-side` (SHERLOCK_SCREENSHOTS keeps them).
"""

from decimal import Decimal

import pytest

from governance.models import PublishingPolicy
from tests.support import factories
from tests.support.browser import log_in
from tests.support.contract_runs import add_trial, empty_run

pytestmark = [pytest.mark.slow]


def run_costing(usd, agent):
    summary = {"cases": 1, "passed": 1, "case_pass_rate": 1.0}
    run = empty_run(agent_version=factories.agent_version(agent), summary=summary)
    add_trial(run, cost_usd=usd)
    return run


def test_the_pages_read_the_verdict_of_the_agents_policy_and_name_it(server, browser, shot):
    factories.user("builder", role="Builder")
    agent = factories.agent("refunds")
    cheap, dear = run_costing("0.10", agent), run_costing("0.70", agent)

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "builder", f"/runs/{cheap.pk}/")
    page.wait_for_selector("#verdict")
    assert "PASSED" in page.inner_text("#verdict")
    thresholds = page.inner_text("#contract-thresholds")
    assert "the default thresholds: no publishing policy applies" in thresholds
    shot(page, "run-page-defaults")

    PublishingPolicy.objects.create(
        name="Refunds policy", agent=agent, version=3, max_cost_per_verified_outcome_usd="0.05"
    )
    page.reload()
    verdict = page.inner_text("#verdict")
    assert "FAILED" in verdict and "the contract fails at budget" in verdict
    thresholds = page.inner_text("#contract-thresholds")
    assert "thresholds of policy «Refunds policy» v3" in thresholds
    assert "the publishing policy of agent refunds" in thresholds
    assert "first failing gate" in page.inner_text(".gates li.first")
    shot(page, "run-page-policy")

    page.goto(f"{server}/runs/compare/?a={cheap.pk}&b={dear.pk}")
    page.wait_for_selector("#contract")
    assert "A and B: evaluated with thresholds of policy «Refunds policy» v3" in (
        page.inner_text("#contract-thresholds")
    )
    gate_row = page.inner_text("#contract tr:has(td:text-is('gate'))")
    assert gate_row.count("fail (budget)") == 2 and "pass" not in gate_row
    shot(page, "compare-policy")

    other = run_costing("0.10", factories.agent("other"))
    PublishingPolicy.objects.create(name="Global", max_cost_per_verified_outcome_usd=Decimal(1))
    page.goto(f"{server}/runs/compare/?a={cheap.pk}&b={other.pk}")
    page.wait_for_selector("#contract")
    thresholds = page.inner_text("#contract-thresholds")
    assert "A: evaluated with thresholds of policy «Refunds policy» v3" in thresholds
    assert "B: evaluated with thresholds of policy «Global» v1" in thresholds
    gate_row = page.inner_text("#contract tr:has(td:text-is('gate'))")
    assert gate_row.index("fail (budget)") < gate_row.index("pass")
    shot(page, "compare-policy-per-side")
