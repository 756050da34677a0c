"""When a trace is complete, and its trial built at that moment (docs/production.md, "When a
trace is complete").

A trace is open until one of two things happens:

- its root span came (a span without a parent: the SDK exports a span when it ends, so a root
  received is the explicit end marker) and every span's parent is in the trace: complete now;
- `SHERLOCK_TRACE_QUIET_SECONDS` passed since the last span was received: complete when every
  span's parent came, else incomplete (a child whose parent never came, or no root at all),
  with the reason on the trace.

The move is the state machine's compare-and-set (`TRACE_STATES`), so a sweep and the task an
export call enqueued may both look at a trace and only one moves it. The trial is built in the
same update (`production.traces.normalize`), priced with the model prices when the spans carried no
cost. A span arriving after that still joins the trace (nothing accepted is dropped): the
sweep rebuilds the trial of an ended trace that received spans since it was built, and the
state stays.
"""

import logging
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from evaluations.costs.prices import agent_cost, load_prices
from production.choices import TRACE_STATES, ScoreState, TraceState
from production.models import Span, Trace, TraceScore
from production.online import scoring as online_scoring
from production.traces.normalize import NORMALIZER_VERSION, SESSION_KEYS, USER_KEYS, normalize
from production.traces.otlp import from_nanos
from sherlock.core.queue import enqueue
from sherlock.core.text import scrub, scrub_text
from sherlock.core.transcripts import figure_problems

log = logging.getLogger("sherlock.production")

BATCH = 500
SPAN_FIELDS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "start_unix_nano",
    "end_unix_nano",
    "status_code",
    "status_message",
    "scope_name",
    "attributes",
    "events",
)


def enqueue_completion(trace_ids):
    """Complete these traces (which received a root span) in the background now rather than at
    the next sweep: one task per export call, queued with the call's writes."""
    enqueue("production.tasks.complete_traces", trace_ids, task_name="complete-traces")


def complete_traces(trace_ids=None, now=None):
    """Decide the open traces that are due (all of them, or those of `trace_ids`), and rebuild
    the trials of ended traces that received spans after theirs was built. Returns the number
    of traces that ended."""
    now = now or timezone.now()
    quiet_since = now - timedelta(seconds=settings.SHERLOCK_TRACE_QUIET_SECONDS)
    open_traces = Trace.objects.filter(state=TraceState.OPEN)
    if trace_ids is not None:
        open_traces = open_traces.filter(pk__in=trace_ids)
    else:
        # The sweep reads only traces that may be due: quiet, or holding a root span (one
        # whose parent was missing when its call enqueued it).
        rooted = Span.objects.filter(trace=OuterRef("pk"), parent_span_id="")
        open_traces = open_traces.filter(Q(last_received_at__lte=quiet_since) | Exists(rooted))
    ended = 0
    prices = None
    pks = list(open_traces.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(pks), BATCH):
        prices = prices if prices is not None else load_prices()
        ended += _decide(pks[start : start + BATCH], quiet_since, now, prices)
    if trace_ids is None:
        stale = list(
            Trace.objects.exclude(state=TraceState.OPEN)
            .filter(last_received_at__gt=F("normalized_at"))
            .values_list("pk", flat=True)[:BATCH]
        )
        if stale:
            _rebuild(stale, now, prices if prices is not None else load_prices())
    return ended


def _spans_of(pks):
    spans: dict[Any, Any] = {}
    for row in Span.objects.filter(trace_id__in=pks).order_by().values(*SPAN_FIELDS):
        spans.setdefault(row["trace_id"], []).append(row)
    return spans


def _decide(pks, quiet_since, now, prices):
    """Decide each trace of `pks` in its own transaction: a trace whose trial cannot be stored
    is marked incomplete with the reason, and never holds back the others of its batch."""
    ended, complete = 0, []
    spans = _spans_of(pks)
    for trace in Trace.objects.filter(pk__in=pks, state=TraceState.OPEN):
        rows = spans.get(trace.pk, [])
        state, reason = verdict(rows, quiet=trace.last_received_at <= quiet_since)
        if state is None:
            continue
        try:
            with transaction.atomic():
                moved = TRACE_STATES.move(
                    trace,
                    state,
                    completed_at=now,
                    state_reason=reason,
                    **_trial(trace, rows, now, prices),
                )
        except (DatabaseError, ValueError, TypeError, RecursionError) as exc:
            moved = _unstorable(trace, now, exc)
            state = TraceState.INCOMPLETE
        if moved:
            ended += 1
            if state == TraceState.COMPLETE:
                complete.append(trace.pk)
    # Online scoring follows (one task for the batch); the minute's sweep of online scoring
    # catches any trace this misses (production.online.scoring).
    online_scoring.enqueue(complete)
    return ended


def _unstorable(trace, now, exc):
    """Mark a trace whose trial could not be stored incomplete, with the reason (its spans are
    kept: a later normalizer may build it). True when this call moved it."""
    log.warning("trace %s: its trial could not be stored: %s", trace.pk, exc)
    reason = f"its trial could not be stored: {type(exc).__name__}: {exc}"
    with transaction.atomic():
        return TRACE_STATES.move(
            trace,
            TraceState.INCOMPLETE,
            completed_at=now,
            normalized_at=now,
            state_reason=scrub_text(reason)[:300],
        )


def _rebuild(pks, now, prices):
    """Rebuild the trials of ended traces that received spans since theirs was built; a trace
    already scored on the old trial loses that score, so the online sweep scores it again on
    the whole of it (a root span exported before its children completes a trace early)."""
    spans = _spans_of(pks)
    rescore = []
    for trace in Trace.objects.filter(pk__in=pks):
        try:
            with transaction.atomic():
                Trace.objects.filter(pk=trace.pk).update(
                    **_trial(trace, spans.get(trace.pk, []), now, prices)
                )
                TraceScore.objects.filter(trace=trace).exclude(state=ScoreState.SCORING).delete()
        except (DatabaseError, ValueError, TypeError, RecursionError) as exc:
            log.warning("trace %s: its rebuilt trial could not be stored: %s", trace.pk, exc)
            Trace.objects.filter(pk=trace.pk).update(normalized_at=now)  # not tried again
            continue
        if trace.state == TraceState.COMPLETE:
            rescore.append(trace.pk)
    online_scoring.enqueue(rescore)


def verdict(spans, quiet):
    """(state, reason) a trace's spans make it, or (None, "") while it stays open."""
    ids = {span["span_id"] for span in spans}
    roots = [span for span in spans if not span["parent_span_id"]]
    orphans = {
        span["parent_span_id"]
        for span in spans
        if span["parent_span_id"] and span["parent_span_id"] not in ids
    }
    if roots and not orphans:
        return (
            TraceState.COMPLETE,
            "its root span ended" if not quiet else "quiet, every parent came",
        )
    if not quiet:
        return None, ""
    if orphans:
        missing = ", ".join(sorted(orphans)[:3]) + (" ..." if len(orphans) > 3 else "")
        return TraceState.INCOMPLETE, f"quiet with parent spans that never came: {missing}"
    return TraceState.INCOMPLETE, "quiet and its root span never came"


def _trial(trace, spans, now, prices):
    """The fields a trace's trial sets (`production.traces.normalize`), its cost priced."""
    result = normalize(spans, trace.trace_id)
    # Recorded text: a NUL or a lone surrogate a tracer's JSON attribute held (`"\\u0000"`
    # parsed by the normalizer) becomes U+FFFD (`sherlock.core.text`).
    transcript = scrub(result.transcript)
    figures = {
        "latency_ms": result.latency_ms,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
    }
    problems = figure_problems(transcript)
    if problems:
        # A tracer's figure out of range (a cost of $10^9, tokens past the column) is dropped
        # from the trial and named, and the rest of the trace is kept: one bad attribute
        # never stops completion (docs/api.md, "Numbers").
        for key, _ in problems:
            transcript.pop(key, None)
            if key == "latency_ms":
                figures["latency_ms"] = None
            if key == "usage":
                figures.update(input_tokens=None, output_tokens=None)
        transcript["invalid"] = [message for _, message in problems]
    cost, _coverage = agent_cost(transcript, result.model, prices)
    starts = [s["start_unix_nano"] for s in spans if s["start_unix_nano"]]
    ends = [s["end_unix_nano"] for s in spans if s["end_unix_nano"]]
    root = next((s for s in spans if not s["parent_span_id"]), None)
    return {
        "dialect": result.dialect,
        "normalizer_version": NORMALIZER_VERSION,
        "normalized_at": now,
        "transcript": transcript,
        "input_text": scrub_text(result.input_text[:100_000]),
        "output_text": scrub_text(result.output_text[:100_000]),
        **figures,
        "cost_usd": cost.quantize(Decimal("0.000001")) if cost is not None else None,
        "model": scrub_text(result.model),
        "session": scrub_text(result.session or _resource_identity(trace, SESSION_KEYS)),
        "end_user": scrub_text(result.end_user or _resource_identity(trace, USER_KEYS)),
        "has_error": result.has_error,
        "span_count": len({s["span_id"] for s in spans}),
        "root_span_id": root["span_id"] if root else "",
        "first_span_at": _at(min(starts)) if starts else trace.first_span_at,
        "last_span_at": _at(max(ends)) if ends else None,
    }


def _resource_identity(trace, keys):
    """A session or user the trace's resource names, when no span does."""
    resource = trace.resource or {}
    for key in keys:
        value = resource.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return str(value)[:200]
    return ""


def _at(value):

    return from_nanos(value)
