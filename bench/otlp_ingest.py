"""OTLP ingest under load: several exporter processes send traces of 5 spans to gunicorn over
loopback for D seconds; accepted spans per second, latency per export call, and 0 lost.

Seeds its own database (PostgreSQL `sherlock_bench_otlp`, created and dropped here; `--sqlite`
uses a fresh SQLite file instead): one agent with a version, a Builder and an API key. Starts
`gunicorn sherlock.wsgi` with W sync workers on a loopback port, then P exporter processes,
each a real client: the OpenTelemetry SDK makes T traces of 5 spans (an `invoke_agent` root,
two `chat` spans with GenAI 1.37 messages and usage, two `execute_tool` spans with arguments
and results, about 2.5 KB of attributes a trace), and the stock protobuf exporter
(`opentelemetry-exporter-otlp-proto-http`, configured by `OTEL_EXPORTER_OTLP_ENDPOINT` and
`OTEL_EXPORTER_OTLP_HEADERS` like a team's) sends them in one export call, as its batch
processor does with up to 512 spans. Only the export call is timed; making the spans is the
client's own work and is not counted against the server (it runs on the same cores, though).

Each exporter first makes two calls that are not counted (each worker imports its views and
opens its connection on its first request), then all start together. By default the fleet
offers 2,400 spans a second in all (`--rate`; the target's 2,000 and some), in calls of 20
traces (100 spans; `--traces-per-call`) to 4 workers, each exporter sending on its own
schedule (and at once when it is behind), which is how a fleet's batch processors send: the
p99 is that of calls at the target's throughput, not of a saturated server's queue. `--rate 0`
sends each next call as soon as the last is answered (the most the server takes; its p99 is
queueing), and `--traces-per-call 100` calls of 500 spans, near the SDK batch processor's
512.

Accepted spans are those of calls the exporter reports SUCCESS (the receiver answers 200 only
once its spans are in the database); lost = accepted - the spans the database holds at the end.
The traces' completion task is enqueued per call (the ORM broker's row); no worker runs here.
The server's CPU (gunicorn's workers and PostgreSQL's backends, from /proc) is reported per
1,000 accepted spans: on a shared machine it moves less than the latencies do.

`--orm-inserts` runs the workers with `bench/otlp_orm_inserts.py`: spans written by the ORM's
`bulk_create` instead of `production.traces.ingest.insert_rows`, to measure what that fast path
pays.

Targets on the 2-core machine: >= 2,000 spans/s, p99 < 200 ms per export call, 0 lost. The
last line is machine-readable: `spans_per_s=.. p50_ms=.. p99_ms=.. max_ms=.. calls=..
failed_calls=.. accepted=.. stored=.. lost=.. server_cpu_ms_per_1k_spans=.. load=..`.

    .venv/bin/python bench/otlp_ingest.py [--duration 60] [--exporters 4] [--workers 4]
        [--traces-per-call 20] [--rate 2400] [--orm-inserts] [--sqlite]
        [--port 0] [--postgres postgres://postgres@127.0.0.1:5432] [--database NAME]
        [--log /tmp/sherlock-bench-otlp-gunicorn.log]

`--port` is gunicorn's (0: a free one), `--postgres` the server the bench database is created
on (and dropped from), `--database` its name, `--log` where gunicorn's log goes.
"""

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api_load import free_port, start_server, stop_server  # noqa: E402
from bench.run_throughput import PG, drop_database, recreate_database  # noqa: E402

DATABASE = "sherlock_bench_otlp"
SPANS_PER_TRACE = 5


def seed():
    """The agent the traces name, and a Builder's API key (its secret)."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from agents.models import Agent, AgentVersion
    from governance.models import APIKey, RoleGrant

    agent = Agent.objects.create(slug="support-bot", name="Support bot")
    AgentVersion.objects.create(agent=agent, number=1, adapter="python", config={})
    user = get_user_model().objects.create_user("bench-builder", password="x")
    RoleGrant.objects.create(user=user, role="Builder", scope="global", reason="bench")
    user.groups.add(Group.objects.get(name="Builder"))
    from datetime import timedelta

    from django.utils import timezone

    expiry = timezone.now() + timedelta(days=1)
    return APIKey.objects.create_key(user=user, name="bench exporter", expiry_date=expiry)[1]


def stored_spans():
    from production.models import Span

    return Span.objects.count()


def messages(role, text):
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def build_traces(tracer, count, n):
    """`count` agent turns of 5 spans, as an instrumented agent writes them."""
    for i in range(count):
        question = f"Where is order A{n}-{i}? It was due yesterday and I need it for Friday."
        with tracer.start_as_current_span("invoke_agent support-bot") as root:
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            root.set_attribute("gen_ai.agent.name", "support-bot")
            for step in range(2):
                with tracer.start_as_current_span("chat small") as chat:
                    chat.set_attribute("gen_ai.operation.name", "chat")
                    chat.set_attribute("gen_ai.provider.name", "openai")
                    chat.set_attribute("gen_ai.request.model", "small")
                    chat.set_attribute("gen_ai.input.messages", messages("user", question))
                    chat.set_attribute(
                        "gen_ai.output.messages",
                        messages("assistant", "Let me look that up for you." * (step + 1)),
                    )
                    chat.set_attribute("gen_ai.usage.input_tokens", 120 + step * 40)
                    chat.set_attribute("gen_ai.usage.output_tokens", 20)
                with tracer.start_as_current_span("execute_tool orders.lookup") as tool:
                    tool.set_attribute("gen_ai.operation.name", "execute_tool")
                    tool.set_attribute("gen_ai.tool.name", "orders.lookup")
                    tool.set_attribute("gen_ai.tool.call.id", f"call_{i}_{step}")
                    tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"order": i}))
                    tool.set_attribute(
                        "gen_ai.tool.call.result", json.dumps({"status": "shipped", "eta": "Fri"})
                    )


WARM_UP_CALLS = 2


def exporter_process(n, base_url, secret, start_at, deadline, traces_per_call, interval, results):
    """One exporter: make a batch of traces, export it, time the call, until the deadline;
    every `interval` seconds when it is set, else as soon as the last call is answered."""
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"{base_url}/api/v1"
    os.environ["OTEL_EXPORTER_OTLP_HEADERS"] = f"Authorization={quote('Token ' + secret)}"
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "support-bot", "sherlock.agent.version": 1})
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench.agent")
    exporter = OTLPSpanExporter(timeout=30)

    def batch():
        memory.clear()
        build_traces(tracer, traces_per_call, n)
        return memory.get_finished_spans()

    warm = 0
    for _ in range(WARM_UP_CALLS):
        spans = batch()
        if exporter.export(spans) == SpanExportResult.SUCCESS:
            warm += len(spans)
    time.sleep(max(0.0, start_at - time.time()))
    latencies, accepted, failed, late = [], 0, 0, 0
    first = time.time()
    # Paced exporters start spread over one interval, not all at once.
    next_at = first + (interval * n / 8 if interval else 0)
    while time.time() < deadline:
        spans = batch()
        if interval:
            wait = next_at - time.time()
            if wait > 0:
                time.sleep(wait)
            else:
                late += 1
            next_at += interval
        started = time.perf_counter()
        outcome = exporter.export(spans)
        latencies.append((time.perf_counter() - started) * 1000)
        if outcome == SpanExportResult.SUCCESS:
            accepted += len(spans)
        else:
            failed += 1
    exporter.shutdown()
    results.put(
        {
            "latencies": latencies,
            "accepted": accepted,
            "warm": warm,
            "failed": failed,
            "late": late,
            "first": first,
            "last": time.time(),
        }
    )


def server_cpu(server_pid, database):
    """CPU seconds used so far by gunicorn's processes and the bench database's backends."""
    from bench.api_load import backend_pids, cpu_seconds
    from bench.run_throughput import group_pids

    pids = group_pids(server_pid) + (backend_pids(database) if database else [])
    return cpu_seconds(pids)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60, help="seconds of load")
    parser.add_argument("--exporters", type=int, default=4, help="exporter processes")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers")
    parser.add_argument("--traces-per-call", type=int, default=20, help="5 spans each")
    parser.add_argument(
        "--rate", type=float, default=2400, help="spans/s offered in all (0: as fast as answered)"
    )
    parser.add_argument(
        "--orm-inserts", action="store_true", help="spans by bulk_create, not insert_rows"
    )
    parser.add_argument("--sqlite", action="store_true", help="a fresh SQLite file, not PG")
    parser.add_argument("--port", type=int, default=0, help="gunicorn's port (0: a free one)")
    parser.add_argument("--postgres", default=PG, help="the PostgreSQL server, as a URL")
    parser.add_argument("--database", default=DATABASE, help="the bench database's name")
    parser.add_argument(
        "--log", default="/tmp/sherlock-bench-otlp-gunicorn.log", help="gunicorn's log"
    )
    args = parser.parse_args()

    if args.sqlite:
        path = Path(tempfile.mkdtemp(prefix="sherlock-bench-otlp-")) / "db.sqlite3"
        database_url = f"sqlite:///{path}"
    else:
        recreate_database(args.database, server=args.postgres)
        database_url = f"{args.postgres}/{args.database}"
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    env = {**os.environ, "DATABASE_URL": database_url, "DB_CONN_MAX_AGE": "60"}
    spans_per_call = args.traces_per_call * SPANS_PER_TRACE
    interval = spans_per_call * args.exporters / args.rate if args.rate else 0
    server = None
    try:
        secret = seed()
        port = args.port or free_port()
        extra = ["-c", "python:bench.otlp_orm_inserts"] if args.orm_inserts else []
        server = start_server(args, port, env, extra, log_path=args.log)
        base_url = f"http://127.0.0.1:{port}"
        context = multiprocessing.get_context("spawn")
        results = context.Queue()
        start_at = time.time() + 10  # the processes start and warm up within that
        deadline = start_at + args.duration
        processes = [
            context.Process(
                target=exporter_process,
                args=(
                    n,
                    base_url,
                    secret,
                    start_at,
                    deadline,
                    args.traces_per_call,
                    interval,
                    results,
                ),
            )
            for n in range(args.exporters)
        ]
        for process in processes:
            process.start()
        time.sleep(max(0.0, start_at - time.time()))
        load_before = os.getloadavg()[0]
        database = None if args.sqlite else args.database
        cpu_before = server_cpu(server.pid, database)
        outcomes = [results.get(timeout=args.duration + 120) for _ in processes]
        cpu_after = server_cpu(server.pid, database)
        for process in processes:
            process.join()
        load_after = os.getloadavg()[0]
        stored = stored_spans()
    finally:
        if server is not None:
            stop_server(server)
        if not args.sqlite:
            from django.db import connections

            connections.close_all()
            drop_database(args.database, server=args.postgres)

    from bench.api_load import cpu_used

    latencies = [ms for outcome in outcomes for ms in outcome["latencies"]]
    accepted = sum(outcome["accepted"] for outcome in outcomes)
    warm = sum(outcome["warm"] for outcome in outcomes)
    failed = sum(outcome["failed"] for outcome in outcomes)
    late = sum(outcome["late"] for outcome in outcomes)
    busy_seconds = sum(sum(outcome["latencies"]) / 1000 for outcome in outcomes)
    window = max(o["last"] for o in outcomes) - min(o["first"] for o in outcomes)
    rate = accepted / window
    cpu, _gone = cpu_used(cpu_before, cpu_after)
    cpu_per_1k = 1000 * cpu / (accepted / 1000) if accepted else float("nan")
    lost = accepted + warm - stored
    offered = f"{args.rate:.0f} spans/s offered" if args.rate else "as fast as answered"
    print(
        f"OTLP ingest: {args.exporters} exporter processes -> gunicorn, {args.workers} sync "
        f"workers, {'SQLite' if args.sqlite else 'PostgreSQL'}, {args.traces_per_call} traces x "
        f"{SPANS_PER_TRACE} spans per export call, {offered}, {args.duration:.0f} s, spans by "
        f"{'bulk_create' if args.orm_inserts else 'insert_rows'}; load average before/after "
        f"{load_before:.2f}/{load_after:.2f}"
    )
    print(
        f"  {len(latencies)} export calls ({failed} failed, {late} sent late), {accepted} "
        f"spans accepted (+{warm} warming up), {stored} stored; export call p50 "
        f"{statistics.median(latencies):.1f} ms, p99 {percentile(latencies, 0.99):.1f} ms, max "
        f"{max(latencies):.1f} ms; exporters spent {busy_seconds:.1f} s waiting on calls; "
        f"server CPU {cpu:.1f} s ({cpu_per_1k:.0f} ms per 1,000 spans)"
    )
    print(
        f"spans_per_s={rate:.0f} p50_ms={statistics.median(latencies):.1f} "
        f"p99_ms={percentile(latencies, 0.99):.1f} max_ms={max(latencies):.1f} "
        f"calls={len(latencies)} failed_calls={failed} accepted={accepted} stored={stored} "
        f"lost={lost} server_cpu_ms_per_1k_spans={cpu_per_1k:.0f} "
        f"load={load_before:.2f}/{load_after:.2f}"
    )


if __name__ == "__main__":
    main()
