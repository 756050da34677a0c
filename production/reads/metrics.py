"""Production metrics of an agent over time, per version (docs/production.md, "Metrics").

Per bucket (an hour over the last 48 hours, or a day over the last 30 days, in UTC, by when
Sherlock received each trace) and per version: the traces received, how many ended in error,
latency p50 and p95, tokens, cost, and the mean score of each online check over the traces
scored. In a constant number of queries whatever the traffic:

1. one grouped aggregate for volume, errors, tokens and cost;
2. one query per percentile: each trace's rank in its bucket by latency and the bucket's
   count, as window functions, kept where the rank is the percentile's (the nearest-rank
   method: the ceil(p x n)-th latency);
3. one read of the scored traces' check results, the newest `SCORES_READ` of the period (a
   score per check is inside a JSON list no portable SQL aggregates).
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, timedelta
from typing import Any

from django.db.models import Count, F, FloatField, Q, Sum, Value, Window
from django.db.models.functions import Ceil, Coalesce, RowNumber, Trunc
from django.utils import timezone

from production.models import Trace, TraceScore

RANGES = {"48h": ("hour", timedelta(hours=48)), "30d": ("day", timedelta(days=30))}
PERCENTILES = (50, 95)
SCORES_READ = 10_000


def production_metrics(agent, range_name="48h", now=None):
    """The metrics of `agent` over `range_name` (`48h` by hour, `30d` by day): a dict with the
    bucket size, the bucket starts, and per version its series (lists aligned on the buckets,
    `None` where the version had no trace)."""
    kind, span = RANGES.get(range_name, RANGES["48h"])
    now = now or timezone.now()
    since = _floor(now - span, kind)
    traces = Trace.objects.filter(agent=agent, received_at__gte=since).annotate(
        bucket=Trunc("received_at", kind, tzinfo=UTC), number=F("agent_version__number")
    )
    rows = (
        traces.values("bucket", "number")
        .annotate(
            volume=Count("pk"),
            errors=Count("pk", filter=Q(has_error=True)),
            tokens=Sum(Coalesce("input_tokens", 0) + Coalesce("output_tokens", 0)),
            cost=Sum("cost_usd"),
            unpriced=Count("pk", filter=Q(cost_usd__isnull=True)),
        )
        .order_by()
    )
    buckets = _buckets(since, now, kind)
    index = {start: i for i, start in enumerate(buckets)}
    series: defaultdict[Any, Any] = defaultdict(lambda: _empty(len(buckets)))
    for row in rows:
        i = index.get(_aware(row["bucket"]))
        if i is None:
            continue
        line = series[_name(row["number"])]
        line["volume"][i] = row["volume"]
        line["errors"][i] = row["errors"]
        line["error_rate"][i] = row["errors"] / row["volume"] if row["volume"] else None
        line["tokens"][i] = row["tokens"] or 0
        line["cost_usd"][i] = float(row["cost"]) if row["cost"] is not None else None
        line["unpriced"][i] = row["unpriced"]
    for p in PERCENTILES:
        for row in _percentile_rows(traces, p):
            i = index.get(_aware(row["bucket"]))
            if i is not None:
                series[_name(row["number"])][f"latency_p{p}_ms"][i] = row["latency_ms"]
    checks = _check_scores(agent, since, index, kind)
    for (name, label), values in checks.items():
        series[name]["checks"].setdefault(label, [None] * len(buckets))
        for i, (total, count) in values.items():
            series[name]["checks"][label][i] = total / count
    return {
        "range": range_name if range_name in RANGES else "48h",
        "bucket": kind,
        "since": since,
        "buckets": buckets,
        "versions": dict(sorted(series.items())),
    }


def metrics_json(metrics):
    """`production_metrics` with its times as ISO 8601 text (the API's answer, the page's
    embedded data)."""
    return {
        **metrics,
        "since": metrics["since"].isoformat(),
        "buckets": [start.isoformat() for start in metrics["buckets"]],
    }


def _percentile_rows(traces, p):
    """(bucket, version number, latency) of the trace whose latency is the `p`-th percentile
    of its bucket and version (nearest rank): one query, window functions kept by a filter."""
    partition = [F("bucket"), F("agent_version_id")]
    ranked = traces.filter(latency_ms__isnull=False).annotate(
        rank=Window(RowNumber(), partition_by=partition, order_by=F("latency_ms").asc()),
        size=Window(Count("pk"), partition_by=partition),
    )
    wanted = Ceil(F("size") * Value(p / 100, output_field=FloatField()))
    return ranked.filter(rank=wanted).values("bucket", "number", "latency_ms")


def _check_scores(agent, since, index, kind):
    """{(version name, check label): {bucket index: (sum of scores, count)}} over the newest
    `SCORES_READ` scored traces of the period."""
    found: defaultdict[tuple[str, str], defaultdict[int, tuple[float, int]]] = defaultdict(
        lambda: defaultdict(lambda: (0.0, 0))
    )
    scored = (
        TraceScore.objects.filter(agent=agent, state="scored", completed_at__gte=since)
        .order_by("-completed_at")
        .values_list("completed_at", "agent_version__number", "results")[:SCORES_READ]
    )
    for completed_at, number, results in scored:
        i = index.get(_floor(completed_at, kind))
        if i is None or not isinstance(results, list):
            continue
        for result in results:
            score = result.get("score") if isinstance(result, dict) else None
            if isinstance(score, int | float) and not isinstance(score, bool):
                if not math.isfinite(score):
                    continue
                key = (_name(number), str(result.get("label") or "?"))
                total, count = found[key][i]
                found[key][i] = (total + float(score), count + 1)
    return found


def _empty(n):
    return {
        "volume": [0] * n,
        "errors": [0] * n,
        "error_rate": [None] * n,
        "latency_p50_ms": [None] * n,
        "latency_p95_ms": [None] * n,
        "tokens": [0] * n,
        "cost_usd": [None] * n,
        "unpriced": [0] * n,
        "checks": {},
    }


def _name(number):
    return f"v{number}" if number is not None else "no version"


def _floor(moment, kind):
    moment = moment.astimezone(UTC)
    moment = moment.replace(minute=0, second=0, microsecond=0)
    return moment.replace(hour=0) if kind == "day" else moment


def _aware(moment):
    if moment is None:
        return None
    if timezone.is_naive(moment):
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _buckets(since, now, kind):
    step = timedelta(days=1) if kind == "day" else timedelta(hours=1)
    buckets, moment = [], since
    while moment <= now:
        buckets.append(moment)
        moment += step
    return buckets
