"""Scoring complete production traces in the background, by the checks and verifiers of runs.

`enqueue(trace_ids)` (called on commit when traces complete, `production.traces.closing`) queues
one `production.tasks.score_traces` task for them; the minute's sweep
(`production.tasks.sweep_online_scoring`) scores any complete trace still without a score, and
takes back a claim whose worker died. For each trace of an agent with an active rule:

1. the rule selects it or not: deterministic sampling, then its filters (`rules`); a trace
   left out gets a `skipped` score saying why, so it is never looked at again;
2. the trace is claimed (its `TraceScore` created `scoring`; the unique trace makes a second
   worker's claim fail);
3. when the rule's checks ask the judge, the trace's estimated judge cost is reserved under
   the daily cap (`spend`); no room: `capped`, not scored, and said so;
4. the rule's checks score the trace's transcript through the run engine's
   `score_transcript` (the same effective checks, statuses and judge flow as a run's trial),
   with the judge pinned to the rule's model, and `collect_evidence_for` runs the rule's
   outcome verifier and the tools' effect verifiers as a run's evidence step does;
5. the score is written (`scored`) with the contract's per-trial columns, the trace's whole
   cost (agent + judge) and the lag from the trace's completion; the reservation is settled.

Then each agent that got scores has its production contract looked at for a breach
(`breach.look_for_breach`).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from agents.models import AgentVersion, Tool
from evaluations.choices import BillingCoverage
from evaluations.contract.db import GRADER_RAN
from evaluations.costs.prices import agent_cost, load_prices
from evaluations.costs.texts import format_usd
from evaluations.engine.evidence import collect_evidence_for, contract_counts
from evaluations.engine.trials import score_transcript
from evaluations.judge import get_default_judge
from production.choices import SCORE_STATES, ScoreState, TraceState
from production.models import OnlineRule, Span, Trace, TraceScore
from production.online import rules, spend
from production.online.breach import look_for_breach
from production.traces.assembly import folded_name
from sherlock.core.queue import enqueue as enqueue_task
from sherlock.core.text import scrub, scrub_text
from sherlock.core.transcripts import tool_calls

log = logging.getLogger("sherlock.production")

# A claim older than this belongs to a worker that died: the sweep takes it back.
CLAIM_TIMEOUT = timedelta(minutes=10)
SWEEP_BATCH = 2000


def enqueue(trace_ids):
    """Queue the scoring of these traces with the caller's writes (`sherlock.core.queue`)."""
    ids = [int(pk) for pk in trace_ids]
    if not ids:
        return

    enqueue_task("production.tasks.score_traces", ids, group="online-scoring")


class PinnedJudge:
    """The judge with the rule's model pinned: every check asks that model, whatever its own
    `judge_model` says, so a window's scores come from one judge."""

    __slots__ = ("judge", "model")

    def __init__(self, judge, model):
        self.judge, self.model = judge, model

    def ask(self, rubric, variables, *, model=None, **options):
        return self.judge.ask(rubric, variables, model=self.model or model, **options)

    async def aask(self, rubric, variables, *, model=None, **options):
        return await self.judge.aask(rubric, variables, model=self.model or model, **options)


def sweep():
    """Score every complete trace without a score (oldest first, a bounded batch), after
    handing back the claims of workers that died, then look at every active rule's agent for a
    breach. Returns the number of traces looked at."""
    stale = timezone.now() - CLAIM_TIMEOUT
    TraceScore.objects.filter(state=ScoreState.SCORING, claimed_at__lt=stale).delete()
    # A cap raised since it stopped scoring today: today's capped traces are scored again.
    for rule in OnlineRule.objects.filter(active=True, spend__capped_at__isnull=False).distinct():
        spend.reopen(rule)
    pks = list(
        Trace.objects.filter(state=TraceState.COMPLETE, online_score__isnull=True)
        .order_by("completed_at", "pk")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    looked = score_traces(pks) if pks else 0
    # What the batches' throttle left unlooked at (a burst's last seconds).
    from production.online.breach import look_for_breach

    for agent_id in OnlineRule.objects.filter(active=True).values_list("agent_id", flat=True):
        look_for_breach(agent_id)
    return looked


def score_traces(trace_ids):  # noqa: C901
    """Score the complete traces of `trace_ids` not scored yet; returns how many were looked
    at (scored, capped or skipped). Idempotent: a trace with a score is left alone."""
    traces = list(
        Trace.objects.filter(
            pk__in=list(trace_ids), state=TraceState.COMPLETE, online_score__isnull=True
        )
        .select_related("agent_version")
        .order_by("completed_at", "pk")  # the oldest first: under a cap, in completion order
    )
    if not traces:
        return 0
    agent_ids = {trace.agent_id for trace in traces}
    rules_by_agent = {
        rule.agent_id: rule
        for rule in OnlineRule.objects.filter(agent_id__in=agent_ids, active=True)
    }
    span_filters = {
        agent
        for agent, rule in rules_by_agent.items()
        if any(f["on"] == "span" for f in rule.filters)
    }
    span_attributes: dict[Any, Any] = {}
    if span_filters:
        wanted = [trace.pk for trace in traces if trace.agent_id in span_filters]
        for trace_pk, attributes in Span.objects.filter(trace_id__in=wanted).values_list(
            "trace_id", "attributes"
        ):
            span_attributes.setdefault(trace_pk, []).append(attributes)
    prices = load_prices()
    checks_by_rule = {rule.pk: rules.rule_checks(rule) for rule in rules_by_agent.values()}
    judged = {pk for pk, checks in checks_by_rule.items() if rules.uses_model(checks)}
    looked, scored_agents = 0, set()

    def note(trace, state):
        nonlocal looked
        if state is not None:
            looked += 1
            if state == ScoreState.SCORED:
                scored_agents.add(trace.agent_id)

    plain = [t for t in traces if t.agent_id in rules_by_agent]
    cheap = [t for t in plain if rules_by_agent[t.agent_id].pk not in judged]
    if cheap:
        # Deterministic checks only: nothing is spent, so no claim first; the batch's scores
        # are written by one INSERT in their final state, the unique trace leaving out any
        # another worker wrote meanwhile. The tools and denied tools are read once.
        known = _known_tools(cheap)
        rows = []
        for trace in cheap:
            rule = rules_by_agent[trace.agent_id]
            span_sets = span_attributes.get(trace.pk, [])
            row = _score_at_once(trace, rule, checks_by_rule[rule.pk], prices, span_sets, known)
            rows.append(row)
        _write_scores(rows)
        for trace, row in zip(cheap, rows, strict=True):
            note(trace, row.state)
    for trace in plain:
        rule = rules_by_agent[trace.agent_id]
        if rule.pk in judged:
            # The judge is asked: claimed first, under the cap, one trace at a time, so the
            # day's spend and the judge calls are committed as they happen.
            span_sets = span_attributes.get(trace.pk, [])
            note(trace, score_trace(trace, rule, checks_by_rule[rule.pk], prices, span_sets))
    if scored_agents:
        for agent_id in sorted(scored_agents):
            if _breach_due(agent_id):
                look_for_breach(agent_id)
    return looked


# An agent's production contract is looked at for a breach at most this often, across all
# workers (the contract is two aggregates per window; at 50 traces a second, every batch need
# not pay them): a compare-and-set on the rule's `breach_checked_at`. The sweep looks too.
BREACH_INTERVAL = timedelta(seconds=5)


def _breach_due(agent_id, now=None):
    now = now or timezone.now()
    due = Q(breach_checked_at__isnull=True) | Q(breach_checked_at__lt=now - BREACH_INTERVAL)
    return OnlineRule.objects.filter(due, agent_id=agent_id).update(breach_checked_at=now) == 1


def _known_tools(traces):
    """({agent id: registered tools by name}, {version id: denied tool names}) for these traces'
    calls:
    two queries for the batch instead of two per trace
    (`evaluations.engine.evidence.tool_effects`)."""

    names: set[Any] = set()
    for trace in traces:
        try:
            names.update(call.name for call in tool_calls(trace.transcript or {}) or [])
        except (ValueError, TypeError):
            continue  # unreadable calls: tool_effects says so, without any tool
    # Each agent reads its own tools, then the shared ones.
    tools = Tool.objects.named_for_agents({trace.agent_id for trace in traces}, names)
    denied: dict[int | None, set[str]] = {trace.agent_version_id: set() for trace in traces}
    through = AgentVersion.denied_tools.through
    for version_id, name in through.objects.filter(agentversion_id__in=list(denied)).values_list(
        "agentversion_id", "tool__name"
    ):
        denied[version_id].add(name)
    return tools, denied


def _score_at_once(trace, rule, checks, prices, span_attributes, known):
    """The unsaved score of a trace whose checks ask no judge, in its final state."""
    tools, denied = known
    now = timezone.now()
    row = TraceScore(
        trace=trace,
        agent_id=trace.agent_id,
        agent_version_id=trace.agent_version_id,
        rule=rule,
        completed_at=trace.completed_at or now,
        claimed_at=now,
    )
    reason = _left_out(trace, rule, span_attributes)
    if reason is not None:
        row.state, row.reason = ScoreState.SKIPPED, reason[:500]
        return row
    fields = _scored_fields(
        trace,
        rule,
        checks,
        None,
        prices,
        tools=tools[trace.agent_id],
        denied=denied.get(trace.agent_version_id),
    )
    row.state = ScoreState.SCORED
    for name, value in fields.items():
        setattr(row, name, value)
    return row


def _write_scores(rows):
    """Write the batch's scores in one INSERT; when the database refuses it, each score in its
    own transaction, so one that cannot be stored never holds back the others: it is written
    `skipped` with the reason instead (and is not looked at again)."""
    try:
        with transaction.atomic():
            TraceScore.objects.bulk_create(rows, ignore_conflicts=True)
        return
    except DatabaseError:
        log.warning("a batch of %s scores could not be stored at once; one at a time", len(rows))
    for row in rows:
        try:
            with transaction.atomic():
                TraceScore.objects.bulk_create([row], ignore_conflicts=True)
        except DatabaseError as exc:
            log.warning("the score of trace %s could not be stored: %s", row.trace_id, exc)
            bare = TraceScore(
                trace_id=row.trace_id,
                agent_id=row.agent_id,
                agent_version_id=row.agent_version_id,
                rule=row.rule,
                completed_at=row.completed_at,
                claimed_at=row.claimed_at,
                state=ScoreState.SKIPPED,
                reason=scrub_text(f"the score could not be stored: {exc}")[:500],
            )
            with transaction.atomic():
                TraceScore.objects.bulk_create([bare], ignore_conflicts=True)
            row.state = ScoreState.SKIPPED


def _claim(trace, rule, state, reason="", **fields):
    """Create the trace's score in `state` (with `fields`); None when another worker has it
    already."""
    now = timezone.now()
    try:
        with transaction.atomic():
            return TraceScore.objects.create(
                trace=trace,
                agent_id=trace.agent_id,
                agent_version_id=trace.agent_version_id,
                rule=rule,
                state=state,
                reason=reason[:500],
                completed_at=trace.completed_at or now,
                claimed_at=now,
                **fields,
            )
    except IntegrityError:
        return None


def _left_out(trace, rule, span_attributes):
    if trace.agent_version_id is None:
        return "the trace names no version of the agent"
    if not isinstance(trace.transcript, dict):
        return "the trace has no transcript"
    if not rules.sampled(trace.trace_id, rule.sampling_rate):
        return f"not in the sample (rate {rule.sampling_rate:g})"
    if rule.filters and not rules.matches(rule.filters, trace.resource, span_attributes):
        return "the rule's filters do not match"
    return None


def case_of(trace):
    """The check input of a production trace: its input, no expectations (an Editor adds
    those when the trace becomes a case)."""
    transcript = trace.transcript or {}
    return {
        "id": trace.trace_id,
        "input": transcript.get("input", ""),
        "expected": {},
        "contexts": [],
        "expected_tools": [],
        "tags": [],
    }


def score_trace(trace, rule, checks, prices, span_attributes=()):
    """Score one complete trace under `rule`; returns the score's final state, or None when
    another worker holds it."""
    reason = _left_out(trace, rule, span_attributes)
    if reason is not None:
        return ScoreState.SKIPPED if _claim(trace, rule, ScoreState.SKIPPED, reason) else None
    score = _claim(trace, rule, ScoreState.SCORING)
    if score is None:
        return None

    judge: Any = None
    reserved = Decimal(0)
    if rules.uses_model(checks):
        judge = get_default_judge(agent=trace.agent_id)
        if judge is not None:
            amount = spend.estimate(rule, checks, prices)
            if amount is None:
                return _capped(
                    score,
                    f"the pinned judge model {rule.judge_model!r} has no price, so the "
                    "daily spend cap cannot be enforced",
                )
            if not spend.reserve(rule, amount):
                cap = format_usd(rule.daily_cap_usd)
                return _capped(
                    score,
                    f"the daily judge spend cap of {cap} was reached (scored again today if "
                    "the cap is raised)",
                )
            reserved = amount
            judge = PinnedJudge(judge, rule.judge_model)
    try:
        fields = _scored_fields(trace, rule, checks, judge, prices)
    except Exception:
        if reserved:
            spend.settle(rule, reserved, Decimal(0))
        TraceScore.objects.filter(pk=score.pk, state=ScoreState.SCORING).delete()
        raise
    if reserved:
        spend.settle(rule, reserved, fields["judge_usd"])
    SCORE_STATES.move(score, ScoreState.SCORED, **fields)
    return ScoreState.SCORED


def _capped(score, reason):
    SCORE_STATES.move(score, ScoreState.CAPPED, reason=reason[:500], scored_at=timezone.now())
    return ScoreState.CAPPED


def declared_transcript(transcript, rule):
    """`transcript` with its declared completion as the rule reads it (docs/production-
    online.md, "Declared completion"): the spans' own `sherlock.declared_complete` when they
    said it, else, when the rule names a completion tool, whether the trace called it; else as
    it is (nothing declared)."""
    if isinstance(transcript.get("declared_complete"), bool) or not rule.completion_tool:
        return transcript

    wanted = folded_name(rule.completion_tool)
    calls = transcript.get("tool_calls") if isinstance(transcript.get("tool_calls"), list) else []
    called = any(isinstance(c, dict) and folded_name(c.get("name")) == wanted for c in calls)
    return {**transcript, "declared_complete": called}


def _scored_fields(trace, rule, checks, judge, prices, *, tools=None, denied=None):
    transcript = declared_transcript(trace.transcript, rule)
    case = case_of(trace)
    scored = score_transcript(case, transcript, checks, judge)
    context = {
        "id": trace.pk,
        "trace_id": trace.trace_id,
        "run_id": None,
        "repetition": 0,
        # The trial's own clock: its first span's start and its last span's end, by the
        # spans' timestamps (an exporter sends spans after they end, in batches, late: the
        # receipt time says nothing about when the agent acted).
        "started_at": trace.first_span_at.isoformat() if trace.first_span_at else None,
        "ended_at": trace.last_span_at.isoformat() if trace.last_span_at else None,
    }
    evidence = collect_evidence_for(
        case,
        rule.outcome_check,
        trace.agent_version,
        context,
        transcript,
        tools=tools,
        denied=denied,
    )
    if not rule.verify_effects:
        evidence["tool_effects"] = []
        evidence.update(contract_counts(evidence["progress"], evidence["wait"], []))
    calls = [call for item in scored for call in item.calls]
    real = [call for call in calls if not call.cached]
    judge_usd = sum((call.usd for call in real if call.usd is not None), Decimal(0))
    unpriced = any(call.usd is None for call in real)
    agent_usd, coverage = agent_cost(transcript, trace.model, prices)
    if unpriced:
        coverage = BillingCoverage.MISSING
    quality = rules.quality_label(rule, checks)
    quality_score = next(
        (
            item.score
            for item in scored
            if item.check.label == quality and item.score is not None and item.status in GRADER_RAN
        ),
        None,
    )
    now = timezone.now()
    completed = trace.completed_at or now
    # Recorded text (a verifier's evidence, a check's reason quoting the trace) is stored by
    # the project's one rule: NUL and lone surrogates as U+FFFD (`sherlock.core.text`).
    evidence = scrub(evidence)
    return {
        **evidence,
        "results": scrub([_result(item) for item in scored]),
        "judge_call_ids": [call.pk for call in calls if call.pk is not None],
        "quality_score": quality_score,
        "judge_usd": judge_usd,
        "cost_usd": None if agent_usd is None else agent_usd + judge_usd,
        "billing_coverage": coverage,
        "scored_at": now,
        "lag_ms": max(0, int((now - completed).total_seconds() * 1000)),
    }


def _result(item):
    return {
        "label": item.check.label,
        "kind": item.check.kind,
        "status": item.status,
        "score": item.score,
        "threshold": item.threshold,
        "blocking": item.blocking,
        "reason": item.reason,
        "evidence": item.evidence,
        "judge_call_ids": [call.pk for call in item.calls if call.pk is not None],
    }
