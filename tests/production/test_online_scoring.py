"""Online scoring: complete traces scored in the background by the same checks and verifiers
as runs (the same results for the same transcript), stored per trace with the lag from
completion; sampling and filters leave traces out and say why; the daily judge spend cap is
reserved before the judge is asked, and nothing is asked beyond it."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from evaluations.models import CheckResult, CostEntry, ModelPrice
from production import tasks
from production.actions.create_online_rule import CreateOnlineRule
from production.choices import ScoreState
from production.models import OnlineSpend, TraceScore
from production.online import scoring
from production.online.spend import estimate
from tests.support import factories, online
from tests.support.judge_fixtures import JUDGE_MODEL
from tests.support.llm_server import schema_responder

CHECKS = [
    {"label": "fast", "kind": "latency", "params": {"max_ms": 2000}, "threshold": 1.0},
    {"label": "shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0},
    {"label": "tools", "kind": "tools_used", "params": {"match": "any_order"}, "threshold": 1.0},
]
SAFETY = {"label": "safe", "kind": "safety", "params": {}, "threshold": 0.5}
TRANSCRIPT = {"input": "Where is my parcel?", "output": "It ships today.", "latency_ms": 900}


@pytest.fixture
def agent(db):
    return factories.agent("support-bot")


@pytest.fixture
def version(agent):
    return factories.agent_version(agent)


def rule_for(agent, builder, **fields):
    return CreateOnlineRule(acting_user=builder, agent=agent, **fields).execute()


def test_a_trace_scores_as_a_run_scores_the_same_transcript(
    agent, version, builder, django_capture_on_commit_callbacks
):
    library = factories.dataset_version(
        cases=[("parcel", "Where is my parcel?", {"expected_tools": [{"name": "kb.search"}]})],
        checks=CHECKS,
    )
    run = factories.start_run(builder, version, library, django_capture_on_commit_callbacks)
    trial = run.trials.get()
    expected = {
        r.check_config.label: (r.status, r.score, r.threshold, r.blocking, r.reason)
        for r in CheckResult.objects.filter(trial=trial).select_related("check_config")
    }
    rule_for(agent, builder, library_version=library.pk)
    row = online.trace(agent, version, trial.transcript)
    assert scoring.score_traces([row.pk]) == 1
    score = TraceScore.objects.get(trace=row)
    got = {
        r["label"]: (r["status"], r["score"], r["threshold"], r["blocking"], r["reason"])
        for r in score.results
    }
    # The case's expected tools are the case's, not the trace's: compare the checks that read
    # only the transcript, and the tools check's own verdict on a trace without expectations.
    assert got["fast"] == expected["fast"] and got["shape"] == expected["shape"]
    assert score.state == ScoreState.SCORED and score.agent_version == version


def test_own_checks_and_the_outcome_verifier_fill_the_contract_columns(
    agent, version, builder, settings
):
    settings.SHERLOCK_VERIFIER_CALLABLES = ["tests.production.test_online_scoring."]
    rule_for(
        agent,
        builder,
        checks=CHECKS[:2],
        quality_check="fast",
        outcome_check={"kind": "python", "callable": f"{__name__}.refund_in_output"},
    )
    good = online.trace(
        agent, version, {**TRANSCRIPT, "output": "refund sent", "declared_complete": True}
    )
    bad = online.trace(agent, version, {**TRANSCRIPT, "declared_complete": True})
    scoring.score_traces([good.pk, bad.pk])
    scores = {s.trace_id: s for s in TraceScore.objects.all()}
    assert (scores[good.pk].outcome_verdict, scores[bad.pk].outcome_verdict) == (
        "verified",
        "failed",
    )
    assert scores[good.pk].declared_complete is True
    assert scores[good.pk].quality_score == 1.0


def refund_in_output(context, **_):
    """A test outcome verifier: verified when the transcript's output mentions a refund."""
    return "refund" in (context["transcript"].get("output") or "")


def test_the_lag_from_completion_to_scores_is_recorded(agent, version, builder):
    rule_for(agent, builder, checks=CHECKS[:1])
    row = online.trace(
        agent, version, TRANSCRIPT, completed_at=timezone.now() - timedelta(seconds=5)
    )
    scoring.score_traces([row.pk])
    score = TraceScore.objects.get(trace=row)
    assert score.lag_ms >= 5000
    assert score.scored_at - score.completed_at == timedelta(milliseconds=score.lag_ms) or (
        abs((score.scored_at - score.completed_at).total_seconds() * 1000 - score.lag_ms) < 1
    )


def test_sampling_and_filters_leave_traces_out_and_say_why(agent, version, builder):
    rule = rule_for(
        agent,
        builder,
        checks=CHECKS[:1],
        filters=[{"on": "resource", "key": "env", "op": "equals", "value": "prod"}],
    )
    kept = online.trace(agent, version, TRANSCRIPT, resource={"env": "prod"})
    filtered = online.trace(agent, version, TRANSCRIPT, resource={"env": "staging"})
    scoring.score_traces([kept.pk, filtered.pk])
    assert TraceScore.objects.get(trace=kept).state == ScoreState.SCORED
    left = TraceScore.objects.get(trace=filtered)
    assert (left.state, left.reason, left.results) == (
        ScoreState.SKIPPED,
        "the rule's filters do not match",
        [],
    )
    rule.sampling_rate = 0.0
    rule.save(update_fields=["sampling_rate"])
    unsampled = online.trace(agent, version, TRANSCRIPT, resource={"env": "prod"})
    scoring.score_traces([unsampled.pk])
    assert TraceScore.objects.get(trace=unsampled).reason == "not in the sample (rate 0)"


def test_scoring_is_idempotent_and_needs_an_active_rule(agent, version, builder):
    row = online.trace(agent, version, TRANSCRIPT)
    assert scoring.score_traces([row.pk]) == 0  # no rule yet: left for when there is one
    rule = rule_for(agent, builder, checks=CHECKS[:1], active=False)
    assert scoring.score_traces([row.pk]) == 0
    rule.active = True
    rule.save(update_fields=["active"])
    assert scoring.score_traces([row.pk]) == 1
    assert scoring.score_traces([row.pk]) == 0
    assert TraceScore.objects.count() == 1


def test_completion_enqueues_scoring_and_the_sweep_catches_what_was_missed(
    agent, version, builder, django_capture_on_commit_callbacks
):
    rule_for(agent, builder, checks=CHECKS[:1])
    first = online.trace(agent, version, TRANSCRIPT)
    with django_capture_on_commit_callbacks(execute=True):
        scoring.enqueue([first.pk])
    assert TraceScore.objects.get(trace=first).state == ScoreState.SCORED
    missed = online.trace(agent, version, TRANSCRIPT)
    died = online.trace(agent, version, TRANSCRIPT)
    TraceScore.objects.create(
        trace=died,
        agent=agent,
        agent_version=version,
        state=ScoreState.SCORING,
        completed_at=died.completed_at,
        claimed_at=timezone.now() - timedelta(hours=1),
    )
    assert tasks.sweep_online_scoring() == 2
    assert set(TraceScore.objects.values_list("state", flat=True)) == {ScoreState.SCORED}
    assert TraceScore.objects.get(trace=missed).results[0]["status"] == "passed"


# --- the daily judge spend cap --------------------------------------------------------------------


@pytest.fixture
def priced(db):
    return ModelPrice.objects.create(
        model=JUDGE_MODEL,
        usd_per_million_input=Decimal("100"),
        usd_per_million_output=Decimal("400"),
    )


def test_nothing_is_scored_beyond_the_daily_cap(
    agent, version, builder, judge_settings, llm_server, priced
):
    llm_server.responder = schema_responder
    probe = rule_for(agent, builder, checks=[SAFETY])
    per_trace = estimate(probe, [SAFETY_CHECK], {JUDGE_MODEL: priced})
    probe.daily_cap_usd = per_trace * Decimal("1.5")
    probe.save(update_fields=["daily_cap_usd"])
    # Different answers: the judge's cache would answer repeated questions for free.
    rows = [
        online.trace(agent, version, {**TRANSCRIPT, "output": f"It ships in {n} days."})
        for n in range(6)
    ]
    scoring.score_traces([row.pk for row in rows])
    states = [TraceScore.objects.get(trace=row).state for row in rows]
    scored = states.count(ScoreState.SCORED)
    assert 1 <= scored < 6
    # Once the cap has no room, every later trace is capped: spend never goes down in a day.
    assert states == [ScoreState.SCORED] * scored + [ScoreState.CAPPED] * (6 - scored)
    assert len(llm_server.requests) == scored  # the capped traces never asked the judge
    spend = OnlineSpend.objects.get(rule=probe)
    lines = CostEntry.objects.filter(agent=agent, kind="scoring")
    judged = sum(lines.values_list("usd", flat=True))
    assert spend.spent_usd == judged <= probe.daily_cap_usd
    assert spend.reserved_usd == 0 and spend.capped_at is not None
    assert spend.capped_traces == 6 - scored
    capped = TraceScore.objects.filter(state=ScoreState.CAPPED).first()
    assert "daily judge spend cap" in capped.reason and capped.results == []


def test_raising_the_cap_scores_todays_capped_traces_within_the_new_one(
    agent, version, builder, judge_settings, llm_server, priced, client
):
    """A team raising its cap expects the traces it left unscored today to be scored: the
    sweep takes them back, oldest first, within the new cap; the page names the cap that
    stopped scoring, not the one in force since."""
    from production.actions.update_online_rule import UpdateOnlineRule

    llm_server.responder = schema_responder
    rule = rule_for(agent, builder, checks=[SAFETY], daily_cap_usd="0")
    rows = [
        online.trace(agent, version, {**TRANSCRIPT, "output": f"It ships in {n} days."})
        for n in range(3)
    ]
    scoring.score_traces([row.pk for row in rows])
    assert set(TraceScore.objects.values_list("state", flat=True)) == {ScoreState.CAPPED}
    assert "raised" in TraceScore.objects.first().reason

    UpdateOnlineRule(acting_user=builder, rule=rule, changes={"daily_cap_usd": "50"}).execute()
    client.force_login(builder)
    page = client.get(f"/production/agents/{agent.slug}/").content.decode()
    assert "the daily judge spend cap of $0.00 was reached" in page
    assert "The cap is now $50.00" in page

    scoring.sweep()
    assert set(TraceScore.objects.values_list("state", flat=True)) == {ScoreState.SCORED}
    assert len(llm_server.requests) == 3
    spend = OnlineSpend.objects.get(rule=rule)
    assert spend.capped_at is None and spend.spent_usd <= Decimal("50")
    page = client.get(f"/production/agents/{agent.slug}/").content.decode()
    assert 'id="capped"' not in page

    # Lowered again below what today has spent: later traces are capped, by the new cap.
    UpdateOnlineRule(acting_user=builder, rule=rule, changes={"daily_cap_usd": "0"}).execute()
    later = online.trace(agent, version, {**TRANSCRIPT, "output": "Tomorrow."})
    scoring.sweep()
    assert TraceScore.objects.get(trace=later).state == ScoreState.CAPPED
    assert OnlineSpend.objects.get(rule=rule).capped_cap_usd == Decimal("0")


def test_a_cap_of_zero_asks_nothing(agent, version, builder, judge_settings, llm_server, priced):
    rule_for(agent, builder, checks=[SAFETY], daily_cap_usd="0")
    row = online.trace(agent, version, TRANSCRIPT)
    scoring.score_traces([row.pk])
    assert TraceScore.objects.get(trace=row).state == ScoreState.CAPPED
    assert llm_server.requests == []


def test_a_judge_model_without_a_price_cannot_be_capped(
    agent, version, builder, judge_settings, llm_server
):
    rule_for(agent, builder, checks=[SAFETY])
    row = online.trace(agent, version, TRANSCRIPT)
    scoring.score_traces([row.pk])
    score = TraceScore.objects.get(trace=row)
    assert score.state == ScoreState.CAPPED and "has no price" in score.reason
    assert llm_server.requests == []


def test_without_a_judge_model_checks_are_skipped_not_passed(agent, version, builder):
    rule_for(agent, builder, checks=[SAFETY])
    row = online.trace(agent, version, TRANSCRIPT)
    scoring.score_traces([row.pk])
    (result,) = TraceScore.objects.get(trace=row).results
    assert (result["status"], result["reason"]) == ("skipped", "no judge configured")


def test_the_pinned_judge_model_is_asked(agent, version, builder, judge_settings, llm_server):
    ModelPrice.objects.create(
        model="pinned-judge",
        usd_per_million_input=Decimal("1"),
        usd_per_million_output=Decimal("1"),
    )
    llm_server.responder = schema_responder
    rule_for(agent, builder, checks=[SAFETY], judge_model="pinned-judge")
    scoring.score_traces([online.trace(agent, version, TRANSCRIPT).pk])
    assert [request["model"] for request in llm_server.requests] == ["pinned-judge"]


class _Check:
    kind = "safety"


SAFETY_CHECK = _Check()
