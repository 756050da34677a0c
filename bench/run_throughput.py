"""Run throughput: N cases x k repetitions x m model checks through the real path.

StartRun in this process plans the run and enqueues its shards; two `qcluster` processes (one
worker process each, `SHERLOCK_RUN_CONCURRENCY` = C / 2 calls in flight each) execute them against
PostgreSQL, through Redis when it answers (else django-q2's ORM broker). The agent under test is
an `openai_chat` version and the m checks are `custom` checks (distinct criteria, so the
judge's cache cannot merge them), all served by the loopback OpenAI-compatible server
(tests/support/llm_server.py) with a fixed latency L per call, in this process.

Calls: every request the server answers, agent and judge alike: N x k x (1 + m).
Concurrency C: calls in flight across the whole run. A trial makes its calls one after the
other (its checks read the agent's answer), so C trials in flight in all keep C calls in flight.
Ideal: max(calls x L / C, (1 + m) x L), the second being the critical path of one trial.
The ratio is wall / ideal, the wall time running from StartRun to the run's `completed`.
Per-trial overhead: the mean of (finished_at - started_at) over trials, minus (1 + m) x L: the
engine's own time per trial (claim, scoring, writes, waiting for the GIL or the database).
Peak memory: the largest peak RSS (VmHWM) among the worker processes. Database connections per
worker: the most a worker cluster held at once (pg_stat_activity sampled twice a second, its
client ports matched to the cluster's sockets). Worker CPU: user + system time of the clusters.

Targets on a 2-core machine: ratio <= 1.25 at N=500, k=3, m=4, L=200 ms, C=32, and
within 10 % of that at N=2000; ratio <= 1.25 at L=1000 ms, C=256 with at most 12 database
connections per worker; peak memory flat in N. Uses its own database (`sherlock_bench`,
created and dropped here) on the local PostgreSQL, and Redis database 14 (`--redis` names
another; only its queue key is touched). The last line is machine-readable:
`ratio=R wall_s=W ideal_s=I calls=N db_connections=D peak_rss_mb=M`.

    .venv/bin/python bench/run_throughput.py [--cases 500] [--reps 3] [--checks 4]
        [--latency-ms 200] [--concurrency 32] [--shard-size 64]
"""

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PG = "postgres://postgres@127.0.0.1:5432"
REDIS = "redis://127.0.0.1:6379/14"
OUTPUT = "Thank you for asking. Your refund was approved and will arrive within 3 days."


def responder(request):
    """The agent gets a fixed answer; a judge (custom rubric) grades it and quotes it."""
    from tests.support.llm_server import Reply

    if not request.get("response_format"):
        return Reply(content=OUTPUT, usage=(120, 20))
    return Reply(
        content={"quotes": [OUTPUT[:30]], "reason": "It meets the criterion.", "score": 1},
        usage=(400, 30),
    )


def recreate_database(name, server=PG):
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(name, server=PG):
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def redis_answers(url):
    import redis

    try:
        return redis.Redis.from_url(url, socket_connect_timeout=0.5).ping()
    except redis.RedisError:
        return False


def group_pids(pgid):
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    pids.append(int(entry.name))
            except ProcessLookupError:
                continue
    return pids


def socket_ports(pids):
    """The local TCP ports of the sockets these processes hold (from /proc: fd -> inode -> port)."""
    inodes = set()
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, PermissionError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(FileNotFoundError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[9] in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


class ConnectionSampler:
    """Samples, twice a second, how many PostgreSQL connections each worker cluster holds
    (pg_stat_activity's client ports matched to the cluster's processes); keeps the peak."""

    def __init__(self, database, workers):
        import threading

        self.database, self.workers = database, workers
        self.peaks = [0] * len(workers)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        import psycopg

        with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
            while not self.stopped.wait(0.5):
                ports = {
                    row[0]
                    for row in conn.execute(
                        "SELECT client_port FROM pg_stat_activity WHERE datname = %s",
                        [self.database],
                    )
                }
                for n, worker in enumerate(self.workers):
                    held = len(ports & socket_ports(group_pids(worker.pid)))
                    self.peaks[n] = max(self.peaks[n], held)

    def stop(self):
        self.stopped.set()
        self.thread.join()
        return self.peaks


def cpu_seconds(pids):
    """User + system CPU time these processes used so far."""
    ticks = 0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return 0.0


def seed(args, server_url):
    from decimal import Decimal

    from django.contrib.auth.models import Group, User
    from django.utils import timezone

    from agents.models import Agent, AgentVersion
    from evaluations.models import Case, CaseVersion, Check, Dataset, DatasetVersion, ModelPrice

    builder = User.objects.create_user("bench-builder", is_staff=True)
    builder.groups.add(Group.objects.get(name="Builder"))
    agent = Agent.objects.create(slug="bench-bot", name="Bench bot")
    version = AgentVersion.objects.create(
        agent=agent,
        number=1,
        adapter="openai_chat",
        config={"base_url": server_url, "model": "bench-agent", "max_retries": 0},
    )
    dataset = Dataset.objects.create(slug="bench", name="Bench")
    dataset_version = DatasetVersion.objects.create(dataset=dataset, number=1)
    for i in range(args.checks):
        Check.objects.create(
            dataset_version=dataset_version,
            label=f"Criterion {i + 1}",
            kind="custom",
            params={
                "label": f"Criterion {i + 1}",
                "criterion": f"The answer meets house rule number {i + 1}.",
                "anchors": "0 = it does not, 1 = it does",
            },
            threshold=0.5,
            position=i,
        )
    cases = Case.objects.bulk_create(
        Case(dataset=dataset, key=f"case-{i:05}") for i in range(args.cases)
    )
    CaseVersion.objects.bulk_create(
        CaseVersion(dataset_version=dataset_version, case=case, input=f"Where is my refund? (#{i})")
        for i, case in enumerate(cases)
    )
    dataset_version.frozen_at = timezone.now()
    dataset_version.save(update_fields=["frozen_at"])
    for model in ("bench-agent", "bench-judge"):
        ModelPrice.objects.create(
            model=model,
            usd_per_million_input=Decimal("0.15"),
            usd_per_million_output=Decimal("0.6"),
        )
    return builder, version, dataset_version


def start_workers(args, env):
    processes = []
    for n in range(args.workers):
        log = open(f"/tmp/sherlock-bench-worker-{n}.log", "wb")  # noqa: SIM115
        processes.append(
            subprocess.Popen(
                [sys.executable, str(ROOT / "manage.py"), "qcluster"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    # Ready when each cluster has its sentinel, worker, monitor and pusher (5 processes).
    deadline = time.monotonic() + 60
    while any(len(group_pids(p.pid)) < 5 for p in processes):
        if time.monotonic() > deadline:
            raise SystemExit("the workers did not start; see /tmp/sherlock-bench-worker-*.log")
        time.sleep(0.2)
    time.sleep(1.0)  # their start-up reaper pass and first broker poll
    return processes


def stop_workers(processes):
    for process in processes:
        try:
            os.kill(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--checks", type=int, default=4)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32, help="calls in flight in all")
    parser.add_argument("--workers", type=int, default=2, help="qcluster processes")
    parser.add_argument("--shard-size", type=int, help="default: 4 rounds of a worker's calls")
    parser.add_argument("--db-connections", type=int, default=4, help="per worker process")
    parser.add_argument("--database", default="sherlock_bench")
    parser.add_argument("--redis", default=REDIS, help="the broker's Redis URL (its queue key)")
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()
    per_worker = max(1, args.concurrency // args.workers)
    shard_size = args.shard_size or 4 * per_worker
    latency = args.latency_ms / 1000

    from tests.support.llm_server import LLMServer

    recreate_database(args.database)
    use_redis = redis_answers(args.redis)
    server = LLMServer(latency=latency, responder=responder, record=False, model="bench-judge")
    server.start()
    env = {
        "DATABASE_URL": f"{PG}/{args.database}",
        "SHERLOCK_WORKERS": "1",
        "SHERLOCK_RUN_CONCURRENCY": str(per_worker),
        "SHERLOCK_SHARD_SIZE": str(shard_size),
        "SHERLOCK_DB_CONNECTIONS": str(args.db_connections),
        "SHERLOCK_JUDGE_BASE_URL": server.url,
        "SHERLOCK_JUDGE_MODEL": "bench-judge",
        "SHERLOCK_JUDGE_TIMEOUT": "30",
        # The agent under test is the loopback server: the operator allows it by address.
        "SHERLOCK_AGENT_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
    }
    if use_redis:
        env["REDIS_URL"] = args.redis
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django_q.brokers import get_broker

    if use_redis:
        get_broker().delete_queue()
    builder, version, dataset_version = seed(args, server.url)
    workers = start_workers(args, {**os.environ, **env})
    try:
        from evaluations.actions.start_run import StartRun
        from evaluations.models import Run

        requests_before = server.request_count
        sampler = ConnectionSampler(args.database, workers)
        started = time.perf_counter()
        run = StartRun(
            acting_user=builder,
            agent_version=version,
            dataset_version=dataset_version,
            repetitions=args.reps,
        ).execute()
        while True:
            status = Run.objects.values_list("status", flat=True).get(pk=run.pk)
            if status in ("completed", "failed", "cancelled"):
                break
            time.sleep(0.05)
        wall = time.perf_counter() - started
        connections = sampler.stop()
        cpu = cpu_seconds(pid for w in workers for pid in group_pids(w.pid))
        peak_mb = max((peak_rss_mb(pid) for w in workers for pid in group_pids(w.pid)), default=0.0)
    finally:
        stop_workers(workers)
        server.stop()
        if use_redis:  # the shards left in the queue: their trials were done by helpers
            get_broker().delete_queue()
    served = server.request_count - requests_before
    report(args, run, wall, served, latency, peak_mb, connections, cpu, use_redis)
    if not args.keep_db:
        from django.db import connections

        connections.close_all()
        drop_database(args.database)


def report(args, run, wall, served, latency, peak_mb, connections, cpu, use_redis):
    from django.db.models import Avg, F

    from evaluations.models import Run, Trial

    run = Run.objects.get(pk=run.pk)
    trials = args.cases * args.reps
    calls = trials * (1 + args.checks)
    critical_path = (1 + args.checks) * latency
    ideal = max(calls * latency / args.concurrency, critical_path)
    mean_trial = Trial.objects.filter(run=run).aggregate(d=Avg(F("finished_at") - F("started_at")))
    overhead_ms = mean_trial["d"].total_seconds() * 1000 - critical_path * 1000
    workers = sorted(set(Trial.objects.filter(run=run).values_list("worker", flat=True)))
    print(
        f"{args.cases} cases x {args.reps} reps x {args.checks} model checks, "
        f"L={args.latency_ms} ms, C={args.concurrency} "
        f"({args.workers} workers x {args.concurrency // args.workers} in flight), "
        f"broker={'redis' if use_redis else 'orm'}"
    )
    print(
        f"run #{run.pk}: {run.status}, {run.trials_done}/{run.trials_total} trials, "
        f"{run.trials_error} errors, spend ${run.spend_usd:.4f} (judge ${run.judge_spend_usd:.4f})"
        f"; estimated before it started: {run.estimate['calls']} calls, "
        f"${run.estimate['usd_known']:.4f} known, unknown: {run.estimate['price_missing'] or '-'}"
    )
    print(
        f"trials per worker: {[Trial.objects.filter(run=run, worker=w).count() for w in workers]}"
    )
    print(f"calls: {calls} planned, {served} served by the loopback server")
    spread = calls * latency / args.concurrency
    print(
        f"wall: {wall:.2f} s; ideal: {ideal:.2f} s = max(calls x L / C = {spread:.2f} s, "
        f"critical path {critical_path:.2f} s)"
    )
    print(f"per-trial overhead: {overhead_ms:.1f} ms; peak worker RSS: {peak_mb:.0f} MB")
    print(
        f"worker CPU: {cpu:.1f} s in all, {cpu * 1000 / max(served, 1):.2f} ms per call; "
        f"this process (the loopback server): {time.process_time():.1f} s"
    )
    print(
        f"database connections per worker (peak, sampled): {connections}; "
        f"SHERLOCK_DB_CONNECTIONS={args.db_connections}"
    )
    print(
        f"ratio={wall / ideal:.3f} wall_s={wall:.2f} ideal_s={ideal:.2f} calls={calls} "
        f"db_connections={max(connections, default=0)} peak_rss_mb={peak_mb:.0f}"
    )


if __name__ == "__main__":
    main()
