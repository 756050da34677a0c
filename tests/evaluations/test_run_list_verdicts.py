"""The run list gives each finished run the verdict of its page (`evaluations.verdict`).

A walk through the pages found the list calling a run "completed 5/5" in green while its page
read "FAILED: the contract fails at false success". The list now has a verdict column: PASSED,
or FAILED and why in short ("13/16 cases failed", "contract: false success"), by the run page's
rule and under the same thresholds (the publishing policy in force for the run's agent), from
the runs' stored figures in a constant number of queries, and live, grouped, for runs without.
"""

import html
import re
from datetime import date
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluations.choices import CostKind, RunStatus
from evaluations.contract.runs import run_totals, runs_totals
from evaluations.models import Run
from governance.models import PublishingPolicy
from tests.support import factories
from tests.support.contract_runs import add_trial, empty_run, import_seed_variant, refinish

pytestmark = pytest.mark.django_db

TOOLS = [{"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}]


@pytest.fixture
def signed_in(client, builder, password):
    client.login(username=builder.username, password=password)
    return client


def costing(usd, agent, *, stored=False):
    """A run of one verified trial costing ``usd``: $0.70 fails the default $0.60 budget. Built
    by hand, it has no stored figures unless ``stored`` (then finished as the engine does)."""
    run = empty_run(
        agent_version=factories.agent_version(agent),
        summary={"cases": 1, "passed": 1, "failed": 0, "case_pass_rate": 1.0},
    )
    add_trial(run, cost_usd=usd)
    return refinish(run) if stored else run


def row_of(body, run):
    """The text of ``run``'s row on the run list."""
    body = html.unescape(re.sub(r"\s+", " ", body))
    row = body.split(f'<a href="/runs/{run.pk}/">{run.pk}</a>', 1)[1].split("</tr>", 1)[0]
    return re.sub(r"<[^>]+>", " ", row)


def listed(client):
    response = client.get("/runs/")
    assert response.status_code == 200
    return response


def test_each_finished_run_reads_on_the_list_the_verdict_of_its_page(
    signed_in, builder, django_capture_on_commit_callbacks
):
    agent = factories.agent("refunds")
    passing = costing("0.10", agent)  # no stored figures: aggregated live
    over_budget = costing("0.70", agent, stored=True)
    false_success = import_seed_variant("fast v2", factories.agent_version(agent))
    flaky = factories.start_run(
        builder,
        factories.agent_version(
            factories.agent("flaky"), callable_path="tests.support.agents_under_test.flaky"
        ),
        factories.dataset_version(
            cases=[("alternating", "q", {"expected_tools": [{"name": "kb.search"}]})],
            checks=TOOLS,
        ),
        django_capture_on_commit_callbacks,
        reps=2,
    )
    running = empty_run(
        status=RunStatus.RUNNING, summary={}, agent_version=factories.agent_version(agent)
    )

    response = listed(signed_in)
    body = response.content.decode()
    shown = {run.pk: run.verdict for run in response.context["runs"]}
    for run in (passing, over_budget, false_success, flaky):
        page = signed_in.get(f"/runs/{run.pk}/").context["verdict"]
        assert shown[run.pk] == page, run
    assert shown[running.pk] is None

    assert "PASSED" in row_of(body, passing) and "FAILED" not in row_of(body, passing)
    assert "FAILED contract: budget" in " ".join(row_of(body, over_budget).split())
    assert "FAILED contract: false success" in " ".join(row_of(body, false_success).split())
    assert "1/1 cases failed" in row_of(body, flaky)
    assert "PASSED" not in row_of(body, running) and "FAILED" not in row_of(body, running)
    # The full reasons, as the run page words them, are the FAILED mark's title.
    assert 'title="the contract fails at false success: ' in body


def test_the_list_reads_the_contract_under_the_policy_in_force_for_the_agent(signed_in):
    agent = factories.agent("refunds")
    stored, live = costing("0.10", agent, stored=True), costing("0.10", agent)
    for run in (stored, live):
        assert "PASSED" in row_of(listed(signed_in).content.decode(), run)

    PublishingPolicy.objects.create(
        name="Tight", agent=agent, version=1, max_cost_per_verified_outcome_usd=Decimal("0.05")
    )
    body = listed(signed_in).content.decode()
    for run in (stored, live):
        assert "FAILED contract: budget" in " ".join(row_of(body, run).split())


def test_judge_spend_recorded_after_the_run_finished_counts_on_the_list_as_on_the_page(
    signed_in,
):
    run = costing("0.10", factories.agent("refunds"), stored=True)
    factories.cost_line(kind=CostKind.SCORING, day=date.today(), usd=None, run=run)

    row = " ".join(row_of(listed(signed_in).content.decode(), run).split())
    assert "FAILED contract: coverage" in row
    verdict = signed_in.get(f"/runs/{run.pk}/").context["verdict"]
    assert verdict.reasons[0].code == "coverage"
    assert verdict.reason_texts[0].startswith("the contract fails at coverage: ")


def test_a_run_that_did_not_complete_is_incomplete_and_says_why_in_short():
    from evaluations.verdict import run_verdict

    run = empty_run(status=RunStatus.CANCELLED, summary={"cases": 16, "passed": 3})
    verdict = run_verdict(run)
    assert verdict.outcome == "incomplete" and verdict.exit_code == 2
    assert verdict.short[:2] == ["run cancelled", "13/16 cases failed"]
    assert verdict.reason_texts[1].startswith("13 of 16 cases failed")


def test_the_totals_of_many_runs_are_each_runs_totals():
    agent = factories.agent("refunds")
    stored, live = costing("0.30", agent, stored=True), costing("0.70", agent)
    empty = empty_run(agent_version=factories.agent_version(agent))
    trial = add_trial(live, cost_usd="0.20", declared_complete=False)
    factories.cost_line(
        kind=CostKind.SCORING, day=date.today(), usd=Decimal("0.05"), run=live, trial=trial
    )
    factories.cost_line(kind=CostKind.SCORING, day=date.today(), usd=None, run=stored)
    factories.cost_line(kind=CostKind.SCORING, day=date.today(), usd=Decimal("1"), run=live)
    runs = [stored, live, empty]

    together = runs_totals(runs)

    assert together == {run.pk: run_totals(run) for run in runs}
    assert together[live.pk].billed_usd == Decimal("1.95")
    assert together[stored.pk].unpriced_judge_calls == 1
    assert together[empty.pk].runs == 0


def test_the_list_keeps_a_constant_number_of_queries_with_verdicts(
    signed_in, builder, django_capture_on_commit_callbacks
):
    """Rows with and without stored figures, of agents with and without a policy: the list's
    queries do not grow with the rows (here from 2 runs to 8)."""

    def queries():
        with CaptureQueriesContext(connection) as ctx:
            listed(signed_in)
        return len(ctx)

    def add_runs(n):
        for i in range(n):
            agent = factories.agent(f"agent-{Run.objects.count()}-{i}")
            costing("0.10", agent, stored=True)
            costing("0.70", agent)

    PublishingPolicy.objects.create(name="Global", version=1)
    add_runs(1)
    listed(signed_in)  # the first request fills the content-type cache (the start form's)
    small = queries()
    add_runs(3)
    assert Run.objects.count() == 8
    assert queries() == small


def test_an_imported_run_without_case_results_reads_no_case_count_not_none(signed_in):
    """An imported run has cases but no checks to pass them: its summary's ``passed`` is None,
    which the list and the run page printed as "None/5"."""
    run = import_seed_variant("stable v1")
    assert run.summary["cases"] == 5 and run.summary["passed"] is None
    row = " ".join(row_of(listed(signed_in).content.decode(), run).split())
    assert "None" not in row and "PASSED" in row
    page = signed_in.get(f"/runs/{run.pk}/").content.decode()
    assert "None/5" not in page and "cases passed" not in page
