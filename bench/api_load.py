"""API under load: list and detail endpoints of runs, trials and audit at a fixed rate.

Seeds its own PostgreSQL database (`sherlock_bench_api`, created and dropped here) directly:
R runs of one agent (the first T of them with their trials, N cases x k repetitions each, two
check results per trial and a transcript of about 1 KB), and A hash-chained audit entries.
Starts `gunicorn sherlock.wsgi` as a subprocess with W sync workers on a loopback port
(persistent database connections, `DB_CONN_MAX_AGE`), then sends requests open-loop at a fixed
rate Q for D seconds, one asyncio task per request (aiohttp's client, a connection per
request as sync workers serve them), each sent at its own appointed time whether or not earlier
ones have answered. The mix cycles through six endpoints:
`/runs/`, `/runs/{id}/`, `/trials/?run={id}`, `/trials/{id}/`, `/audit/`, `/audit/{seq}/`, with
ids drawn at random from the seeded rows. Runs and trials are read by Builders, the audit log by
Admins (it is theirs alone), each with an API token; the requests are spread over several users
so that each stays under the default throttle (`SHERLOCK_API_RATE`), as a fleet of CI clients
would.

Latency runs from a request's appointed time to its answer, so a client that falls behind counts
against the server rather than hiding its queue (no coordinated omission). An error is an
exception or any answer but 2xx. Before the load, each endpoint's query count at this size is
measured in this process (the tests show it does not grow with the rows), and its CPU per
request through the WSGI application, sequentially: the figure other work on the machine
changes least.

Target on the 2-core machine, W=2 workers, Q=200 requests/s, D=30 s: p99 < 100 ms, 0 errors.
The last line is machine-readable: `p50_ms=.. p99_ms=.. max_ms=.. errors=.. requests=..
rate=..`.

    .venv/bin/python bench/api_load.py [--rate 200] [--duration 30] [--workers 2]
        [--runs 2000] [--trial-runs 20] [--cases 500] [--reps 3] [--audit 20000]
"""

import argparse
import asyncio
import contextlib
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run_throughput import PG, drop_database, group_pids, recreate_database  # noqa: E402

BUILDERS, ADMINS = 4, 2
ENDPOINTS = ["runs list", "run detail", "trials list", "trial detail", "audit list", "audit detail"]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def seed(args):
    """The rows, inserted directly (bulk_create): users and their tokens, one agent and
    dataset, the runs with their trials and check results, the audit log. Returns the tokens
    and the ids the load draws from."""
    from datetime import timedelta
    from decimal import Decimal

    from django.contrib.auth.models import Group, User
    from django.utils import timezone

    from agents.models import Agent, AgentVersion
    from evaluations.models import (
        Case,
        CaseVersion,
        Check,
        CheckResult,
        Dataset,
        DatasetVersion,
        Run,
        Trial,
    )
    from governance.models import APIKey, AuditEntry
    from governance.models.audit import GENESIS_HASH

    def users(role, count):
        group = Group.objects.get(name=role)
        made = [User.objects.create_user(f"bench-{role.lower()}-{i}") for i in range(count)]
        for user in made:
            user.groups.add(group)
        expires = timezone.now() + timedelta(days=1)
        return [
            APIKey.objects.create_key(user=user, name="bench", expiry_date=expires)[1]
            for user in made
        ]

    builder_tokens, admin_tokens = users("Builder", BUILDERS), users("Admin", ADMINS)
    builder = User.objects.get(username="bench-builder-0")
    agent = Agent.objects.create(slug="bench-bot", name="Bench bot")
    version = AgentVersion.objects.create(
        agent=agent, number=1, adapter="python", config={"callable": "bench.api_load.agent"}
    )
    dataset = Dataset.objects.create(slug="bench", name="Bench")
    dataset_version = DatasetVersion.objects.create(
        dataset=dataset, number=1, frozen_at=timezone.now()
    )
    checks = [
        Check.objects.create(
            dataset_version=dataset_version,
            label=label,
            kind="output_type",
            params={"type": "text"},
            threshold=1.0,
            position=i,
        )
        for i, label in enumerate(("Shape", "Text"))
    ]
    cases = Case.objects.bulk_create(
        Case(dataset=dataset, key=f"case-{i:05}") for i in range(args.cases)
    )
    case_versions = CaseVersion.objects.bulk_create(
        CaseVersion(dataset_version=dataset_version, case=case, input=f"Where is my refund? #{i}")
        for i, case in enumerate(cases)
    )
    now = timezone.now()
    per_run = args.cases * args.reps
    runs = Run.objects.bulk_create(
        Run(
            agent_version=version,
            dataset_version=dataset_version,
            repetitions=args.reps,
            status="completed",
            requested_by=builder,
            trials_total=per_run,
            trials_done=per_run,
            spend_usd=Decimal("0.0123"),
            estimate={"calls": per_run, "usd_known": "0.0123", "warnings": []},
            summary={"passed": args.cases, "failed": 0, "cases": args.cases},
            started_at=now,
            finished_at=now,
        )
        for _ in range(args.runs)
    )
    answer = "Thank you for asking. Your refund was approved and will arrive within 3 days. " * 8
    trial_ids = []
    for run in runs[: args.trial_runs]:
        trials = Trial.objects.bulk_create(
            (
                Trial(
                    run=run,
                    case=cv.case,
                    case_version=cv,
                    repetition=rep,
                    status="completed",
                    attempts=1,
                    worker="bench",
                    transcript={"output": answer, "messages": [{"role": "user", "content": "?"}]},
                    latency_ms=812.5,
                    prompt_tokens=120,
                    completion_tokens=20,
                    cost_usd=Decimal("0.00003"),
                    billing_coverage="billed",
                    started_at=now,
                    finished_at=now,
                )
                for cv in case_versions
                for rep in range(1, args.reps + 1)
            ),
            batch_size=2000,
        )
        CheckResult.objects.bulk_create(
            (
                CheckResult(
                    trial=trial,
                    check_config=check,
                    score=1.0,
                    status="passed",
                    threshold=1.0,
                    reason="the output is text",
                    evidence={"type": "text"},
                )
                for trial in trials
                for check in checks
            ),
            batch_size=4000,
        )
        trial_ids.extend(t.pk for t in trials)
    # After the entries the seeding itself wrote (users joining groups), chained on the last.
    last = AuditEntry.objects.order_by("-sequence").values("sequence", "hash").first()
    first, prev = (last["sequence"] + 1, last["hash"]) if last else (1, GENESIS_HASH)
    entries, start = [], now - timedelta(days=30)
    for sequence in range(first, first + args.audit):
        run = runs[sequence % len(runs)]
        entry = AuditEntry(
            sequence=sequence,
            at=start + timedelta(seconds=sequence),
            actor=builder,
            actor_repr=builder.username,
            action="evaluations.run.start",
            target_type="evaluations.run",
            target_id=str(run.pk),
            target_repr=f"Run #{run.pk}",
            after={"agent_version": version.pk, "dataset_version": dataset_version.pk},
            request_id=f"req-{sequence}",
            ip="127.0.0.1",
            prev_hash=prev,
        )
        entry.hash = prev = entry.compute_hash()
        entries.append(entry)
    AuditEntry.objects.bulk_create(entries, batch_size=2000)
    return {
        "builders": builder_tokens,
        "admins": admin_tokens,
        "runs": [r.pk for r in runs],
        "trial_runs": [r.pk for r in runs[: args.trial_runs]],
        "trials": trial_ids,
        "audit": list(range(first, first + args.audit)),
    }


def request_for(n, ids, rng):
    """The n-th request of the mix: (endpoint, path, token)."""
    endpoint = ENDPOINTS[n % len(ENDPOINTS)]
    tokens = ids["admins"] if endpoint.startswith("audit") else ids["builders"]
    token = tokens[(n // len(ENDPOINTS)) % len(tokens)]
    path = {
        "runs list": lambda: "/api/v1/runs/",
        "run detail": lambda: f"/api/v1/runs/{rng.choice(ids['runs'])}/",
        "trials list": lambda: f"/api/v1/trials/?run={rng.choice(ids['trial_runs'])}",
        "trial detail": lambda: f"/api/v1/trials/{rng.choice(ids['trials'])}/",
        "audit list": lambda: "/api/v1/audit/",
        "audit detail": lambda: f"/api/v1/audit/{rng.choice(ids['audit'])}/",
    }[endpoint]()
    return endpoint, path, token


def query_counts(ids):
    """Queries per request of each endpoint at this size, measured in this process."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    rng = random.Random(1)
    counts = {}
    for n, endpoint in enumerate(ENDPOINTS):
        _, path, token = request_for(n, ids, rng)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        client.get(path)  # the first request of a process also loads the content types
        with CaptureQueriesContext(connection) as queries:
            status = client.get(path).status_code
        if status != 200:
            raise SystemExit(f"{path} answered {status} before the load")
        counts[endpoint] = len(queries)
    return counts


def cpu_per_endpoint(ids, count=100):
    """CPU milliseconds per request of each endpoint, `count` sequential requests through the
    WSGI application in this process (no network, no other request in flight): what the
    server's code costs, whatever else the machine is running."""
    from wsgiref.util import setup_testing_defaults

    from sherlock.wsgi import application

    class Statuses(list):
        def append_status(self, status, headers, *exc_info):
            self.append(status)

    rng, spent, statuses = random.Random(2), {}, Statuses()
    for n, endpoint in enumerate(ENDPOINTS):
        start = None
        for i in range(count + 5):  # five first, not counted: a key's first use loads it
            if i == 5:
                start = time.process_time()
            _, path, token = request_for(n, ids, rng)
            path, _, query = path.partition("?")
            environ = {
                "REQUEST_METHOD": "GET",
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "HTTP_AUTHORIZATION": f"Token {token}",
            }
            setup_testing_defaults(environ)
            b"".join(application(environ, statuses.append_status))
            if not statuses[-1].startswith("200"):
                raise SystemExit(f"{path} answered {statuses[-1]} before the load")
        spent[endpoint] = 1000 * (time.process_time() - start) / count
    return spent


def cpu_seconds(pids):
    """{pid: user + system CPU seconds} of the processes still there, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    used = {}
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            used[pid] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return used


def cpu_used(before, after):
    """CPU seconds spent between two `cpu_seconds` samples: a process that appeared counts in
    full, one that went away (a worker restarted, a connection closed) is lost and counted."""
    spent = sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())
    return spent, len(set(before) - set(after))


def backend_pids(database):
    """The PostgreSQL backends serving the bench database (the workers' kept connections)."""
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,)
        ).fetchall()
    return [pid for (pid,) in rows]


def start_server(args, port, env, extra=(), log_path="/tmp/sherlock-bench-api-gunicorn.log"):
    """gunicorn with `args.workers` sync workers on `port` (`extra`: more of its options), its
    log in `log_path`."""
    log = open(log_path, "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "sherlock.wsgi:application",
            "--workers",
            str(args.workers),
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
            *extra,
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    import httpx2

    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"gunicorn did not start; see {log_path}")
        with contextlib.suppress(httpx2.HTTPError):
            if httpx2.get(f"http://127.0.0.1:{port}/api/v1/", timeout=2).status_code == 401:
                return process
        time.sleep(0.2)


def stop_server(process):
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)


async def get(session, base_url, path, token):
    """One GET; returns the status. Through aiohttp's client (the transport the engine's
    `AsyncOpenAI` uses), each request on a connection of its own, as a sync gunicorn worker
    serves it (it closes every connection after its answer): httpx's AsyncClient cost more
    CPU per request than the server did (4 ms), on the same two cores, so the generator was
    measuring itself."""
    headers = {"Authorization": f"Token {token}"}
    async with session.get(base_url + path, headers=headers) as response:
        await response.read()
        return response.status


async def load(base_url, ids, rate, duration, seed_value=7, timeout=10):
    """Open loop: request i is sent at start + i / rate. Returns one (endpoint, latency s,
    error or None) per request, the time the sending took, and how late the client was at
    worst."""
    rng = random.Random(seed_value)
    total = int(rate * duration)
    results = []
    lag = 0.0

    async def one(session, endpoint, path, token, due):
        error = None
        try:
            status = await get(session, base_url, path, token)
            if not 200 <= status < 300:
                error = f"HTTP {status}"
        except (aiohttp.ClientError, TimeoutError) as exc:
            error = type(exc).__name__
        results.append((endpoint, time.perf_counter() - due, error))

    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    async with aiohttp.ClientSession(connector=connector, timeout=client_timeout) as session:
        tasks = []
        start = time.perf_counter() + 0.05
        for i in range(total):
            due = start + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                lag = max(lag, -delay)
            tasks.append(asyncio.create_task(one(session, *request_for(i, ids, rng), due)))
        sent = time.perf_counter() - start
        await asyncio.gather(*tasks)
    return results, sent, lag


def median(values):
    """The median, 0 for no values (a --duration too short for one request of an endpoint)."""
    return statistics.median(values) if values else 0.0


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def report(args, results, sent, lag, counts, in_process, loads, cpu):
    latencies = [latency * 1000 for _, latency, _ in results]
    errors = [error for _, _, error in results if error]
    print(
        f"{args.runs} runs ({args.trial_runs} with {args.cases * args.reps} trials each, "
        f"{args.trial_runs * args.cases * args.reps} trials), {args.audit} audit entries; "
        f"gunicorn, {args.workers} sync workers; load average before/after: "
        f"{loads[0]:.2f} / {loads[1]:.2f} on {os.cpu_count()} CPUs"
    )
    print("queries per request: " + ", ".join(f"{e} {counts[e]}" for e in ENDPOINTS))
    print(
        "CPU per request in one process, sequential (WSGI, no network): "
        + ", ".join(f"{e} {in_process[e]:.2f} ms" for e in ENDPOINTS)
        + f"; mean {statistics.mean(in_process.values()):.2f} ms"
    )
    for endpoint in ENDPOINTS:
        mine = [lat * 1000 for e, lat, _ in results if e == endpoint]
        failed = sum(1 for e, _, err in results if e == endpoint and err)
        print(
            f"  {endpoint:13} n={len(mine):5}  p50 {median(mine):6.1f} ms  "
            f"p99 {percentile(mine, 0.99):6.1f} ms  max {max(mine, default=0):7.1f} ms  "
            f"errors {failed}"
        )
    rate = len(results) / sent if sent else 0.0
    print(
        f"{len(results)} requests sent in {sent:.1f} s ({rate:.1f}/s, target {args.rate}/s; "
        f"the client was at most {lag * 1000:.1f} ms late); errors: {len(errors)}"
        + (f" ({', '.join(sorted(set(errors)))})" if errors else "")
    )
    # CPU per request does not depend on what else the machine runs, as latency does: it says
    # how much of the machine the load needs, whoever else is on it.
    per_request = {name: 1000 * used / max(len(results), 1) for name, (used, _) in cpu.items()}
    lost = sum(gone for _, gone in cpu.values())
    print(
        "CPU per request: "
        + ", ".join(f"{name} {per_request[name]:.2f} ms" for name in ("gunicorn", "PostgreSQL"))
        + f", client {per_request['client']:.2f} ms; at {args.rate:g}/s the server side needs "
        f"{(per_request['gunicorn'] + per_request['PostgreSQL']) * args.rate / 1000:.2f} cores"
        + (f" ({lost} processes went away during the load: undercounted)" if lost else "")
    )
    p50, p99 = median(latencies), percentile(latencies, 0.99)
    worst = max(latencies, default=0.0)
    print(f"latency: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {worst:.1f} ms; target p99 < 100 ms")
    print(
        f"p50_ms={p50:.1f} p99_ms={p99:.1f} max_ms={worst:.1f} errors={len(errors)} "
        f"requests={len(results)} rate={rate:.1f}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200, help="requests per second")
    parser.add_argument("--duration", type=float, default=30, help="seconds of load")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--trial-runs", type=int, default=20, help="runs that have trials")
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--audit", type=int, default=20000, help="audit entries")
    parser.add_argument("--database", default="sherlock_bench_api")
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()

    recreate_database(args.database)
    env = {
        "DATABASE_URL": f"{PG}/{args.database}",
        # What a production server sets: a connection kept per worker, not one per request.
        "DB_CONN_MAX_AGE": "60",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)  # the API needs no broker
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    ids = seed(args)
    from django.db import connection

    with connection.cursor() as cursor:  # as autovacuum would, soon after a bulk insert
        cursor.execute("ANALYZE")
    print(f"seeded in {time.perf_counter() - started:.1f} s")
    counts = query_counts(ids)
    in_process = cpu_per_endpoint(ids)
    from django.db import connections

    connections.close_all()
    port = free_port()
    server = start_server(args, port, {**os.environ, **env})
    try:
        base_url = f"http://127.0.0.1:{port}"
        # Warm-up, not counted: each worker imports its views and opens its connection.
        asyncio.run(load(base_url, ids, rate=50, duration=2, seed_value=1))
        before = os.getloadavg()[0]

        def processes():
            return {"gunicorn": group_pids(server.pid), "PostgreSQL": backend_pids(args.database)}

        cpu_before = {name: cpu_seconds(pids) for name, pids in processes().items()}
        client_before = time.process_time()
        results, sent, lag = asyncio.run(load(base_url, ids, args.rate, args.duration))
        cpu = {"client": (time.process_time() - client_before, 0)}
        for name, pids in processes().items():
            cpu[name] = cpu_used(cpu_before[name], cpu_seconds(pids))
        after = os.getloadavg()[0]
    finally:
        stop_server(server)
    report(args, results, sent, lag, counts, in_process, (before, after), cpu)
    if not args.keep_db:
        connections.close_all()
        drop_database(args.database)


if __name__ == "__main__":
    main()
