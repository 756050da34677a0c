"""What a run costs, before and while it runs: the estimate StartRun fills in, a ledger line for
every agent and judge call, "price missing" instead of $0, the billing coverage of each trial,
and the spend on the run as trials finish. Also: a check's judge model reaches the judge, and an
uncalibrated check that requires calibration is scored as informative."""

from decimal import Decimal

import pytest

from agents.models import Agent
from evaluations.models import CheckResult, CostEntry, JudgeCall, ModelPrice, Trial
from tests.support import factories
from tests.support.judge_fixtures import JUDGE_MODEL

CUSTOM = {
    "label": "Polite",
    "kind": "custom",
    "threshold": 0.5,
    "params": {"criterion": "The answer is polite.", "anchors": "0 = rude, 1 = polite"},
}
SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
GOOD = {"quotes": ["You said"], "reason": "It greets.", "score": 1}


def transcript_agent(case, **_):
    """Reports usage and, when the case asks, the cost its provider billed."""
    spec = case["input"]
    answer = {
        "output": f"You said: {spec['say']}",
        "tool_calls": [],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 500},
    }
    if "billed" in spec:
        answer["cost_usd"] = spec["billed"]
    return answer


def start(builder, dataset_version, capture, model=None, reps=1, execute=True, version=None):
    extra = {"model": model} if model else {}
    version = version or factories.agent_version(
        Agent.objects.filter(slug="support-bot").first() or factories.agent(),
        callable_path="tests.evaluations.test_run_cost.transcript_agent",
        **extra,
    )
    return factories.start_run(
        builder, version, dataset_version, capture, reps=reps, execute=execute
    )


@pytest.fixture
def two_cases():
    return factories.dataset_version(
        cases=[("billed", {"say": "hi", "billed": 0.02}, {}), ("unbilled", {"say": "yo"}, {})],
        checks=[SHAPE, CUSTOM],
    )


def price(model, per_million_in, per_million_out):
    return ModelPrice.objects.create(
        model=model,
        usd_per_million_input=Decimal(per_million_in),
        usd_per_million_output=Decimal(per_million_out),
    )


def test_every_agent_and_judge_call_has_a_ledger_line(
    builder, judge_settings, llm_server, two_cases, django_capture_on_commit_callbacks
):
    llm_server.script([GOOD, GOOD])
    run = start(builder, two_cases, django_capture_on_commit_callbacks)
    entries = CostEntry.objects.filter(run=run)
    assert sorted(entries.values_list("kind", flat=True)) == ["agent"] * 2 + ["scoring"] * 2
    agent_id = run.agent_version.agent_id
    assert all(e.agent_id == agent_id and e.day == run.created_at.date() for e in entries)
    assert all(e.trial_id is not None for e in entries)
    for entry in entries.filter(kind="scoring"):
        assert entry.judge_call.trial_id == entry.trial_id
    # Each check result names the judge calls it rests on, stored with its trial.
    polite = CheckResult.objects.filter(trial__run=run, check_config__label="Polite")
    calls = {c.trial_id: c.pk for c in JudgeCall.objects.filter(run=run)}
    assert {r.trial_id: r.judge_call_ids for r in polite} == {t: [pk] for t, pk in calls.items()}


def test_a_judge_on_the_teams_own_server_is_free_when_the_setting_says_so(
    builder, judge_settings, llm_server, two_cases, django_capture_on_commit_callbacks
):
    """Without a price its calls are "price missing" (coverage fails on them); with
    SHERLOCK_JUDGE_FREE they cost $0, in the estimate, the calls and the ledger. A
    ModelPrice row for the model still wins."""
    llm_server.script([GOOD, GOOD])
    unpriced = start(builder, two_cases, django_capture_on_commit_callbacks)
    assert JUDGE_MODEL in unpriced.estimate["price_missing"]
    lines = CostEntry.objects.filter(run=unpriced, kind="scoring")
    assert lines.count() == 2 and all(line.usd is None for line in lines)

    judge_settings.SHERLOCK_JUDGE_FREE = True
    llm_server.script([GOOD, GOOD])
    # Other questions, so the judge is asked again rather than answered from its cache.
    others = factories.dataset_version(
        factories.dataset("others"),
        cases=[("x", {"say": "other"}, {}), ("y", {"say": "more"}, {})],
        checks=[SHAPE, CUSTOM],
    )
    free = start(builder, others, django_capture_on_commit_callbacks)
    assert JUDGE_MODEL not in free.estimate["price_missing"]
    assert free.estimate["judge_usd"] == 0
    lines = CostEntry.objects.filter(run=free, kind="scoring")
    assert lines.count() == 2 and all(line.usd == 0 for line in lines)
    assert all(call.usd == 0 for call in JudgeCall.objects.filter(run=free))

    price(JUDGE_MODEL, "1.00", "1.00")
    priced = start(builder, two_cases, django_capture_on_commit_callbacks, execute=False)
    assert priced.estimate["judge_usd"] > 0


def test_agent_cost_is_billed_when_reported_estimated_from_our_prices_else_missing(
    builder, two_cases, django_capture_on_commit_callbacks
):
    price("agent-model", "1.00", "2.00")
    run = start(builder, two_cases, django_capture_on_commit_callbacks, model="agent-model")
    trials = {t.case.key: t for t in Trial.objects.filter(run=run).select_related("case")}
    assert (trials["billed"].billing_coverage, trials["billed"].cost_usd) == (
        "billed",
        Decimal("0.02"),
    )
    # 1000 tokens in at $1/M and 500 out at $2/M, priced by our table: an estimate.
    assert (trials["unbilled"].billing_coverage, trials["unbilled"].cost_usd) == (
        "estimated",
        Decimal("0.002"),
    )

    unpriced = start(builder, two_cases, django_capture_on_commit_callbacks, model="no-price")
    trial = Trial.objects.get(run=unpriced, case__key="unbilled")
    assert (trial.billing_coverage, trial.cost_usd) == ("missing", None)
    entry = CostEntry.objects.get(trial=trial, kind="agent")
    assert entry.usd is None and str(entry) == f"agent {entry.day} price missing"


def test_spend_so_far_counts_priced_calls_and_the_calls_without_a_price(
    builder, judge_settings, llm_server, two_cases, django_capture_on_commit_callbacks
):
    price(JUDGE_MODEL, "10.00", "10.00")
    llm_server.script([GOOD, GOOD])
    run = start(builder, two_cases, django_capture_on_commit_callbacks, model="no-price")
    judge = sum(JudgeCall.objects.filter(run=run).values_list("usd", flat=True), Decimal(0))
    assert judge > 0
    assert run.judge_spend_usd == judge
    assert run.spend_usd == judge + Decimal("0.02")  # the billed agent call, and the judge
    assert run.unpriced_calls == 1  # the unbilled agent call: price missing, not $0
    assert (run.trials_done, run.trials_error) == (2, 0)


def test_a_checks_judge_model_reaches_the_judge(
    builder, judge_settings, llm_server, django_capture_on_commit_callbacks
):
    checks = [CUSTOM, {**CUSTOM, "label": "Polite (big judge)", "judge_model": "judge-big"}]
    dataset_version = factories.dataset_version(cases=[("one", {"say": "hi"}, {})], checks=checks)
    llm_server.script([GOOD, GOOD])
    run = start(builder, dataset_version, django_capture_on_commit_callbacks)
    assert sorted(r["model"] for r in llm_server.requests) == ["judge-big", JUDGE_MODEL]
    assert set(JudgeCall.objects.filter(run=run).values_list("model", flat=True)) == {
        "judge-big",
        JUDGE_MODEL,
    }


def test_an_uncalibrated_check_that_requires_calibration_cannot_fail_a_case(
    builder, judge_settings, llm_server, django_capture_on_commit_callbacks
):
    gated = {**CUSTOM, "requires_calibration": True, "min_labels": 5}
    dataset_version = factories.dataset_version(cases=[("one", {"say": "hi"}, {})], checks=[gated])
    llm_server.script([{**GOOD, "score": 0}])
    run = start(builder, dataset_version, django_capture_on_commit_callbacks)
    result = CheckResult.objects.get(trial__run=run)
    assert result.status == "failed" and result.blocking is False
    assert "not calibrated: 0/5 human labels" in result.reason
    # Informative until calibrated: it cannot fail the case, nor pass it (no blocking check
    # gave a verdict).
    assert (run.summary["passed"], run.summary["failed"], run.summary["unscored"]) == (0, 0, 1)


def test_start_run_estimates_calls_and_cost_before_it_starts(
    builder, judge_settings, two_cases, django_capture_on_commit_callbacks
):
    price(JUDGE_MODEL, "1.00", "1.00")
    run = start(builder, two_cases, django_capture_on_commit_callbacks, reps=3, execute=False)
    assert run.status == "queued"  # nothing ran yet: the estimate came first
    estimate = run.estimate
    assert (estimate["trials"], estimate["agent_calls"], estimate["judge_calls"]) == (6, 6, 6)
    assert estimate["calls"] == 12
    polite = estimate["checks"]["Polite"]
    assert polite["basis"] == "tokens per question: defaults (no history yet)"
    assert (polite["questions_per_trial"], polite["trials"]) == (1, 6)
    # 6 calls x (900 + 150) tokens at $1/M
    assert polite["usd"] == pytest.approx(0.0063)
    assert estimate["judge_usd"] == pytest.approx(0.0063)
    # The agent has no history and no priced model: its cost is unknown, not $0.
    assert estimate["agent_usd"] is None and estimate["usd"] is None
    assert estimate["price_missing"] == ["agent support-bot v1"]
    assert estimate["agent_basis"] == "unknown: no cost history, and no price for its model"


def test_the_estimate_learns_from_the_same_checks_recent_calls(
    builder, judge_settings, llm_server, two_cases, django_capture_on_commit_callbacks
):
    from tests.support.llm_server import Reply

    price(JUDGE_MODEL, "1.00", "1.00")
    price("agent-model", "1.00", "1.00")
    llm_server.script([Reply(content=GOOD, usage=(2000, 100))] * 2)
    first = start(builder, two_cases, django_capture_on_commit_callbacks, model="agent-model")
    run = start(
        builder,
        two_cases,
        django_capture_on_commit_callbacks,
        reps=2,
        execute=False,
        version=first.agent_version,
    )
    polite = run.estimate["checks"]["Polite"]
    assert (polite["prompt_tokens_per_call"], polite["completion_tokens_per_call"]) == (2000, 100)
    assert polite["basis"] == "tokens per question from the last 2 results of this check"
    assert polite["calls"] == 4  # 2 cases x 2 repetitions, whatever the history
    # The agent's last trials: one billed $0.02, one estimated at 1500 tokens x $1/M.
    assert run.estimate["agent_usd"] == pytest.approx(4 * (0.02 + 0.0015) / 2)
    assert run.estimate["agent_basis"] == "the cost of its last 2 trials"
    assert run.estimate["usd"] == pytest.approx(0.043 + 4 * 0.0021)
    assert run.estimate["price_missing"] == []


def test_the_same_dataset_is_always_estimated_at_the_same_number_of_calls(
    builder, judge_settings, llm_server, django_capture_on_commit_callbacks
):
    """Calls come from the cases, checks and repetitions: a history of re-asks, retries, cache
    hits or skipped results changes the tokens and the cost, never the count. A check a case
    disables is not counted for that case; faithfulness asks two questions a trial."""
    from tests.support.llm_server import malformed, server_error

    faithful = {"label": "Faithful", "kind": "faithfulness", "threshold": 0.5}
    cases = [
        ("one", {"say": "hi"}, {}),
        ("two", {"say": "yo"}, {}),
        ("three", {"say": "hey"}, {"overrides": {"Polite": {"disabled": True}}}),
    ]
    dataset_version = factories.dataset_version(cases=cases, checks=[SHAPE, CUSTOM, faithful])
    counts = []
    for script in ([], [malformed(), server_error(500)] * 4, [GOOD] * 12):
        llm_server.script(script)
        run = start(builder, dataset_version, django_capture_on_commit_callbacks, reps=2)
        estimate = run.estimate
        counts.append(
            (
                estimate["judge_calls"],
                estimate["checks"]["Polite"]["calls"],
                estimate["checks"]["Faithful"]["calls"],
            )
        )
    # Polite: 2 cases (one disables it) x 2; faithfulness: 3 cases x 2 x 2 questions.
    assert counts == [(16, 4, 12)] * 3


def test_without_a_judge_the_estimate_says_model_checks_will_be_skipped(
    builder, settings, two_cases, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    run = start(builder, two_cases, django_capture_on_commit_callbacks, execute=False)
    assert run.estimate["judge_calls"] == 0
    assert "skipped" in run.estimate["checks"]["Polite"]["basis"]


def test_the_admin_shows_progress_spend_and_estimate(
    admin_user, password, builder, settings, two_cases, client, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    run = start(builder, two_cases, django_capture_on_commit_callbacks, model="no-price")
    client.login(username=admin_user.username, password=password)
    page = client.get(f"/admin/evaluations/run/{run.pk}/change/").content.decode()
    assert "2/2" in page
    # One money text everywhere, "price missing (N calls)" (evaluations.costs).
    assert "$0.02 + price missing (1 call)" in page
    assert "2 calls (0 judge), price missing (2 calls) for agent support-bot v" in page
    listing = client.get("/admin/evaluations/run/").content.decode()
    assert "price missing (1 call)" in listing


def test_the_admin_lists_say_price_missing_for_trials_judge_calls_and_ledger_lines(
    admin_user, password, builder, settings, two_cases, client, django_capture_on_commit_callbacks
):
    from datetime import date

    from evaluations.models import JudgeCall

    settings.SHERLOCK_JUDGE_BASE_URL = ""
    start(builder, two_cases, django_capture_on_commit_callbacks, model="no-price")
    JudgeCall.objects.create(model="no-price", rubric_id="r", status="ok", cached=False)
    factories.cost_line(kind="scoring", day=date.today(), model="no-price", usd=None)
    client.login(username=admin_user.username, password=password)
    for url in ("trial", "judgecall", "costentry"):
        page = client.get(f"/admin/evaluations/{url}/").content.decode()
        assert "price missing (1 call)" in page, url
