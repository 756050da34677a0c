"""Lag from a production trace's completion to its online scores, at 50 traces a second with
deterministic checks (target: p95 < 10 s on this machine).

The path is the real one after the completion step: this process creates complete traces at
`--rate` a second for `--seconds` (in batches every `--tick` seconds, each batch's scoring
queued on commit by `production.online.scoring.enqueue`, as `production.traces.closing` does when a
batch of traces completes), and `--workers` `qcluster` processes (one worker each) score them
through django-q2 (Redis when it answers, else the ORM broker) against PostgreSQL, under an
online rule with three deterministic checks (latency, output type, tools used) and the tools'
effect verifiers. Each trace's lag is what the score records: scored_at - completed_at.
Uses its own database (`sherlock_bench_online`, created and dropped here). The last line is
machine-readable: `p95_lag_ms=.. p50_lag_ms=.. p99_lag_ms=.. max_lag_ms=.. traces=.. scored=..
rate=..`.

    .venv/bin/python bench/online_lag.py [--rate 50] [--seconds 60] [--workers 2]
"""

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run_throughput import (  # noqa: E402
    PG,
    drop_database,
    recreate_database,
    redis_answers,
    start_workers,
    stop_workers,
)

# A Redis database of its own (run_throughput uses 14): only django-q2's queue is written there.
REDIS = "redis://127.0.0.1:6379/12"
CHECKS = [
    {"label": "fast", "kind": "latency", "params": {"max_ms": 3000}, "threshold": 1.0},
    {"label": "shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0},
    {"label": "no tools", "kind": "tools_used", "params": {"match": "any_order"}},
]


def transcript(n):
    return {
        "input": f"Where is parcel P-{n}?",
        "output": f"Parcel P-{n} ships today and arrives within 3 days.",
        "tool_calls": [
            {"name": "orders.lookup", "arguments": {"id": f"P-{n}"}, "result": {"ok": True}}
        ],
        "latency_ms": 850,
        "usage": {"prompt_tokens": 120, "completion_tokens": 30},
        "model": "gpt-4o-mini",
        "declared_complete": True,
    }


def seed():
    from agents.models import Agent, AgentVersion, Tool
    from production.models import OnlineRule

    agent = Agent.objects.create(slug="parcel-desk", name="Parcel desk")
    version = AgentVersion.objects.create(
        agent=agent, number=1, adapter="python", config={"callable": "agents.demo.support_bot"}
    )
    Tool.objects.create(name="orders.lookup", effectful=False)
    # What CreateOnlineRule writes (validated the same way), without a user to act.
    from production.actions.online_rule_fields import apply

    rule = OnlineRule(agent=agent)
    apply(rule, {"checks": CHECKS, "sampling_rate": 1.0})
    rule.save()
    return agent, version


def produce(agent, version, rate, seconds, tick):
    """Create complete traces at `rate` a second; returns how many."""
    from django.db import transaction
    from django.utils import timezone

    from production.choices import TraceState
    from production.models import Trace
    from production.online import scoring

    per_tick = max(1, round(rate * tick))
    made, start = 0, time.monotonic()
    while (elapsed := time.monotonic() - start) < seconds:
        due = min(int(elapsed / tick) + 1, int(seconds / tick)) * per_tick
        if made < due:
            now = timezone.now()
            rows = [
                Trace(
                    agent=agent,
                    agent_version=version,
                    trace_id=uuid.uuid4().hex,
                    state=TraceState.COMPLETE,
                    received_at=now,
                    last_received_at=now,
                    completed_at=now,
                    transcript=transcript(made + i),
                    span_count=5,
                )
                for i in range(due - made)
            ]
            with transaction.atomic():
                created = Trace.objects.bulk_create(rows)
                scoring.enqueue([row.pk for row in created])
            made += len(rows)
        time.sleep(max(0.0, start + (int(elapsed / tick) + 1) * tick - time.monotonic()))
    return made


def percentile(ordered, p):
    index = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=50.0, help="traces completed a second")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--tick", type=float, default=0.2, help="seconds between batches")
    parser.add_argument("--workers", type=int, default=2, help="qcluster processes")
    parser.add_argument("--database", default="sherlock_bench_online")
    parser.add_argument("--redis", default=REDIS)
    parser.add_argument("--drain-timeout", type=float, default=120.0)
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()

    recreate_database(args.database)
    use_redis = redis_answers(args.redis)
    env = {
        "DATABASE_URL": f"{PG}/{args.database}",
        "SHERLOCK_WORKERS": "1",
        "LOG_LEVEL": "WARNING",
    }
    if use_redis:
        env["REDIS_URL"] = args.redis
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    from django.db import connections

    from production.models import TraceScore

    processes = []
    try:
        call_command("migrate", verbosity=0)
        agent, version = seed()
        processes = start_workers(args, {**os.environ})
        made = produce(agent, version, args.rate, args.seconds, args.tick)
        deadline = time.monotonic() + args.drain_timeout
        while TraceScore.objects.filter(state="scored").count() < made:
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        lags = sorted(TraceScore.objects.filter(state="scored").values_list("lag_ms", flat=True))
        scored = len(lags)
        lags = lags or [0]
        broker = "redis" if use_redis else "orm"
        print(
            f"{made} traces at {args.rate:g}/s for {args.seconds:g} s, {args.workers} workers, "
            f"broker {broker}: {scored} scored; lag p50 {percentile(lags, 50)} ms, "
            f"p95 {percentile(lags, 95)} ms, p99 {percentile(lags, 99)} ms, max {lags[-1]} ms "
            "(target p95 < 10000 ms)"
        )
        print(
            f"p95_lag_ms={percentile(lags, 95)} p50_lag_ms={percentile(lags, 50)} "
            f"p99_lag_ms={percentile(lags, 99)} max_lag_ms={lags[-1]} traces={made} "
            f"scored={scored} rate={args.rate:g}"
        )
    finally:
        stop_workers(processes)
        connections.close_all()
        if not args.keep_db:
            drop_database(args.database)


if __name__ == "__main__":
    main()
