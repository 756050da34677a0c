"""The cost page's daily totals (`DailyCost`) against a direct sum over the ledger's lines: the
same rows as the lines give, by day, agent and kind, after a run writes its lines, after a
summary re-kinds its judge calls, after a run or an agent is deleted with its lines, and as
the back-fill of migration 0013 computes them from lines written before it; read in one query
however many lines there are."""

import importlib
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.apps import apps
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from agents.models import Agent
from evaluations.actions.summarize_run import SummarizeRun
from evaluations.choices import CostKind
from evaluations.costs import ledger as costs_ledger
from evaluations.models import CostEntry, DailyCost, JudgeCall, ModelPrice, Run
from tests.support import factories
from tests.support.judge_fixtures import JUDGE_MODEL

CUSTOM = {
    "label": "Polite",
    "kind": "custom",
    "threshold": 0.5,
    "params": {"criterion": "The answer is polite.", "anchors": "0 = rude, 1 = polite"},
}
GOOD = {"quotes": ["You said"], "reason": "It greets.", "score": 1}
TODAY = date.today()
SINCE = TODAY - timedelta(days=29)


def summing_agent(case, **_):
    """Reports usage and the cost its provider billed."""
    return {
        "output": f"You said: {case['input']}",
        "tool_calls": [],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 500},
        "cost_usd": 0.02,
    }


def lines_summed():
    """The cost page's rows summed in Python from every line, by the page's rule: a line counts
    for its agent, else its run's; USD is the sum of the priced lines (no amount when none has
    a price); a line without a price is missing unless it was a cached judge answer."""
    rows = {}
    for line in CostEntry.objects.select_related(
        "agent", "run__agent_version__agent", "judge_call"
    ):
        agent = line.agent or (line.run.agent_version.agent if line.run else None)
        if agent is None or line.day < SINCE:
            continue
        row = rows.setdefault(
            (line.day, agent.slug, line.kind),
            {"n": 0, "tokens_in": 0, "tokens_out": 0, "missing": 0, "total_usd": None},
        )
        row["n"] += 1
        row["tokens_in"] += line.prompt_tokens
        row["tokens_out"] += line.completion_tokens
        if line.usd is not None:
            row["total_usd"] = (row["total_usd"] or 0) + line.usd
        elif not (line.judge_call and line.judge_call.cached):
            row["missing"] += 1
    return [
        {"day": day, "agent__slug": slug, "kind": kind, **row}
        for (day, slug, kind), row in sorted(
            rows.items(), key=lambda item: (-item[0][0].toordinal(), item[0][1], item[0][2])
        )
    ]


def ledger():
    return costs_ledger.daily_ledger(Agent.objects.all(), SINCE)


def kept_totals():
    """Every DailyCost row as its key and sums."""
    return sorted(
        DailyCost.objects.filter(entries__gt=0).values_list(
            "day",
            "kind",
            "agent_id",
            "run_id",
            "entries",
            "priced",
            "missing",
            "prompt_tokens",
            "completion_tokens",
            "usd",
        ),
        key=lambda row: (row[0], row[1], row[2], row[3] or 0),
    )


def assert_totals_are_the_lines():
    assert ledger() == lines_summed()
    kept = kept_totals()
    costs_ledger.rebuild_daily_costs()
    assert kept == kept_totals()


@pytest.fixture
def world(db):
    """Lines of every shape: two agents over three days, priced and unpriced, a line bound to a
    run but no agent, one bound to an agent but no run, a cached judge answer without a price,
    a line bound to nothing, and one older than the page's 30 days."""
    version = factories.agent_version(factories.agent("alpha"))
    beta = factories.agent("beta")
    dataset_version = factories.dataset_version(cases=[("one", "q", {})])
    run = Run.objects.create(agent_version=version, dataset_version=dataset_version)
    alpha = version.agent
    cached = JudgeCall.objects.create(model="judge", rubric_id="custom", cached=True)
    paid = JudgeCall.objects.create(model="judge", rubric_id="custom")
    for n in range(3):
        day = TODAY - timedelta(days=n)
        factories.cost_line(
            kind="agent", day=day, agent=alpha, run=run, usd=Decimal("0.25"), prompt_tokens=100
        )
        factories.cost_line(kind="agent", day=day, agent=alpha, run=run, usd=None, model="m")
        factories.cost_line(
            kind="scoring", day=day, agent=beta, usd=Decimal("0.0003"), completion_tokens=7
        )
    factories.cost_line(kind="scoring", day=TODAY, run=run, usd=Decimal("0.1"))  # no agent
    factories.cost_line(kind="scoring", day=TODAY, agent=beta, usd=None, judge_call=cached)
    factories.cost_line(kind="scoring", day=TODAY, agent=beta, usd=None, judge_call=paid)
    factories.cost_line(kind="summary", day=TODAY, usd=Decimal("9"))  # bound to nothing
    factories.cost_line(kind="agent", day=TODAY - timedelta(days=40), agent=alpha, usd=1)
    return run


def test_the_page_shows_the_sums_of_the_lines(world, builder, password):
    rows = ledger()
    assert rows == lines_summed()
    today = {(r["agent__slug"], r["kind"]): r for r in rows if r["day"] == TODAY}
    assert today["alpha", "agent"]["total_usd"] == Decimal("0.25")
    assert today["alpha", "agent"]["missing"] == 1
    assert today["alpha", "scoring"]["total_usd"] == Decimal("0.1")  # its run's agent
    assert today["beta", "scoring"]["n"] == 3
    assert today["beta", "scoring"]["missing"] == 1  # the paid call; the cached one cost nothing
    client = Client()
    client.force_login(builder)
    assert client.get("/costs/").context["rows"] == rows


def test_the_kept_totals_are_those_rebuilt_from_the_lines(world):
    assert_totals_are_the_lines()


def test_a_row_whose_lines_have_no_price_is_price_missing_not_zero(db):
    agent = factories.agent("unpriced")
    factories.cost_line(kind="agent", day=TODAY, agent=agent, usd=None)
    factories.cost_line(kind="agent", day=TODAY, agent=agent, usd=None)
    (row,) = ledger()
    assert (row["total_usd"], row["missing"], row["n"]) == (None, 2, 2)
    assert row == lines_summed()[0]


def test_a_run_adds_its_lines_to_the_totals(
    world, builder, judge_settings, llm_server, django_capture_on_commit_callbacks
):
    ModelPrice.objects.create(
        model=JUDGE_MODEL, usd_per_million_input=Decimal(3), usd_per_million_output=Decimal(5)
    )
    llm_server.script([GOOD] * 6)
    version = factories.agent_version(
        Agent.objects.get(slug="alpha"),
        callable_path="tests.evaluations.test_daily_costs.summing_agent",
    )
    dataset_version = factories.dataset_version(
        factories.dataset("judged"),
        cases=[(f"c{n}", "hi", {}) for n in range(3)],
        checks=[CUSTOM],
    )
    before = CostEntry.objects.count()
    run = factories.start_run(
        builder, version, dataset_version, django_capture_on_commit_callbacks, reps=2
    )
    lines = CostEntry.objects.filter(run=run)
    # An agent line a trial, a judge line a paid judge call (a repetition's is a cache hit).
    paid = JudgeCall.objects.filter(run=run, cached=False).count()
    assert lines.filter(kind="agent").count() == 6 and lines.filter(kind="scoring").count() == paid
    assert CostEntry.objects.count() == before + 6 + paid
    assert_totals_are_the_lines()


def test_a_summary_moves_its_judge_calls_to_the_summary_kind(
    builder, judge_settings, llm_server, django_capture_on_commit_callbacks
):
    version = factories.agent_version()
    dataset_version = factories.dataset_version(
        cases=[("refund-1", "q1", {})],
        checks=[
            {"label": "Json", "kind": "output_type", "params": {"type": "json"}, "threshold": 1.0}
        ],
    )
    run = factories.start_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
    llm_server.script(
        [{"statements": [{"kind": "failures", "text": "Text.", "cases": ["refund-1"]}]}]
    )
    SummarizeRun(acting_user=builder, run=run).execute()
    assert {r["kind"] for r in ledger()} == {CostKind.AGENT, CostKind.SUMMARY}
    assert_totals_are_the_lines()
    # Re-kinded again (to scoring and back): the sums move, none is counted twice.
    lines = CostEntry.objects.filter(run=run)
    judged = lines.filter(judge_call__isnull=False)
    costs_ledger.rekind_cost_lines(judged, CostKind.SCORING)
    assert {r["kind"] for r in ledger()} == {CostKind.AGENT, CostKind.SCORING}
    assert_totals_are_the_lines()
    costs_ledger.rekind_cost_lines(judged, CostKind.SUMMARY)
    costs_ledger.rekind_cost_lines(judged, CostKind.SUMMARY)  # nothing to move
    assert_totals_are_the_lines()


def test_deleting_a_run_or_an_agent_takes_its_totals_with_its_lines(world):
    Run.objects.filter(pk=world.pk).delete()  # its lines go with it (CASCADE)
    assert not CostEntry.objects.filter(run__isnull=False).exists()
    assert_totals_are_the_lines()
    Agent.objects.filter(slug="beta").delete()  # its lines stay, bound to no agent
    assert CostEntry.objects.filter(agent__isnull=True, run__isnull=True).count() == 6
    assert ledger() == []  # alpha's one line left is older than 30 days
    assert_totals_are_the_lines()


def test_the_migration_back_fills_the_totals_of_older_lines(world):
    DailyCost.objects.all().delete()
    assert ledger() == []
    migration = importlib.import_module("evaluations.migrations.0013_daily_costs")
    migration.back_fill(apps, None)
    assert ledger() == lines_summed()
    assert_totals_are_the_lines()


def test_the_ledger_is_one_query_however_many_lines(world, django_assert_num_queries):
    with django_assert_num_queries(1):
        few = ledger()
    agent = Agent.objects.get(slug="alpha")
    costs_ledger.write_cost_lines(
        CostEntry(kind="agent", day=TODAY - timedelta(days=n % 20), agent=agent, usd=1)
        for n in range(200)
    )
    with django_assert_num_queries(1):
        many = ledger()
    assert len(many) > len(few) and many == lines_summed()


def test_writing_lines_costs_the_same_statements_however_many(db):
    alpha, beta = factories.agent("alpha"), factories.agent("beta")

    def statements(n):
        lines = [
            CostEntry(kind="agent", day=TODAY, agent=agent, usd=1)
            for _ in range(n)
            for agent in (alpha, beta)
        ]
        with CaptureQueriesContext(connection) as ctx:
            costs_ledger.write_cost_lines(lines)
        return len(ctx)

    # Within one INSERT's parameters on SQLite (which splits a bigger bulk insert): the lines,
    # the rows of the day made sure of, one UPDATE for each agent's row.
    assert statements(1) == statements(40)
    assert list(DailyCost.objects.values_list("entries", flat=True)) == [41, 41]
