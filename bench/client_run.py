"""A client run end to end: N cases x k repetitions of a team's task that
takes L seconds, C in flight, through `sherlock_client` over HTTP to a local Sherlock (gunicorn,
two qcluster workers, PostgreSQL), scored by m model checks against the loopback judge.

Two measures, on the same server:

1. **The server's scoring alone**: a client run whose N x k transcripts are ready before it
   starts: uploaded as fast as the API takes them (batches of 500, one after the other: the
   upload throughput, transcripts per second), then finished; scoring time = from `finish` to
   a verdict that is no longer pending.
2. **The client run**: `sherlock_client.evaluate(task, ...)` with a task that sleeps L, from
   the call to its Result (version ensured, run created, work read, N x k calls on C threads
   with the uploads overlapping them, finish, scoring, verdict, the trials read back).

Ideal bound: N x k x L / C (the calls, perfectly packed) + the scoring time measured alone.
Target: wall / ideal <= 1.25 at N=500, k=3, L=200 ms, C=32. The last line is machine-readable:
`ratio=R wall_s=W ideal_s=I scoring_s=S upload_tps=T`.

    .venv/bin/python bench/client_run.py [--cases 500] [--reps 3] [--latency-ms 200]
        [--concurrency 32] [--checks 2] [--judge-latency-ms 20]
"""

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "client"))

from bench.client_task import rag_answer  # noqa: E402

PG = "postgres://postgres@127.0.0.1:5432"
OUTPUT = "Thank you for asking. Your refund was approved and will arrive within 3 days."


def responder(request):
    """The judge (a custom rubric) grades every answer 1, quoting its start."""
    from tests.support.llm_server import Reply

    return Reply(
        content={"quotes": [OUTPUT[:30]], "reason": "It meets the criterion.", "score": 1},
        usage=(400, 30),
    )


def database(name, action):
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if action == "create":
            conn.execute(f'CREATE DATABASE "{name}"')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seed(args):
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.utils import timezone

    from agents.models import Agent
    from evaluations.models import Case, CaseVersion, Check, Dataset, DatasetVersion

    builder = User.objects.create_user("bench-builder", is_staff=True)
    builder.groups.add(Group.objects.get(name="Builder"))
    Agent.objects.create(slug="bench-bot", name="Bench bot")
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
    import io

    out = io.StringIO()
    call_command("create_api_token", "bench-builder", stdout=out, stderr=io.StringIO())
    return out.getvalue().strip()


def start(command, env, name):
    log = open(f"/tmp/sherlock-client-bench-{name}.log", "wb")  # noqa: SIM115
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def stop(process):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def wait_listening(port, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit("the web server did not start; see /tmp/sherlock-client-bench-web.log")


def answer(reference, latency_ms=None):
    """A transcript whose output differs per trial and per measure: the judge's cache cannot
    answer the second measure from the first one's questions."""
    transcript = {"output": f"{OUTPUT} (ref {reference})", "cost_usd": 0.0001}
    if latency_ms is not None:
        transcript["latency_ms"] = latency_ms
    return transcript


def scoring_alone(api, args):
    """Measure 1: ready transcripts uploaded as fast as the API takes them, then scored."""
    from sherlock_client import flow

    api.ensure_version("bench-bot", "bench-scoring", {"entrypoint": "bench:ready"})
    run = api.create_client_run(
        agent="bench-bot", version="bench-scoring", dataset="bench", repetitions=args.reps
    )
    work = list(api.work(run["id"]))
    order: dict = {}

    def made(w):
        if args.payload == "short":
            return answer(f"alone {w['key']}", args.latency_ms)
        index = order.setdefault(w["case_version"], len(order))
        return {**rag_answer(f"alone {w['key']}", index, args.large), "latency_ms": args.latency_ms}

    items = [{"key": w["key"], "transcript": made(w)} for w in work]
    started = time.perf_counter()
    batch: list = []
    size = 0
    for item in items:  # batches of at most 500 items and 8 MB, as the client sends them
        weight = len(json.dumps(item))
        if batch and (len(batch) == 500 or size + weight > 8 * 1024 * 1024):
            api.upload(run["id"], batch)
            batch, size = [], 0
        batch.append(item)
        size += weight
    if batch:
        api.upload(run["id"], batch)
    upload_s = time.perf_counter() - started
    started = time.perf_counter()
    api.finish(run["id"])
    verdict = flow.await_verdict(api, run["id"], wait=3600)
    return time.perf_counter() - started, upload_s, len(items), verdict


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--latency-ms", type=int, default=200, help="the task's time per call")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--checks", type=int, default=2, help="model checks per case")
    parser.add_argument("--judge-latency-ms", type=int, default=20)
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--database", default="sherlock_client_bench")
    parser.add_argument(
        "--payload",
        choices=["short", "rag"],
        default="short",
        help="short answers, or 15 KB RAG transcripts with contexts (bench/client_task.py)",
    )
    parser.add_argument("--large", type=int, default=0, help="cases answering 1 to 5 MB")
    parser.add_argument("--alternate", help="also measure this git ref's client, alternated")
    parser.add_argument("--rounds", type=int, default=1, help="measures of each client")
    args = parser.parse_args()
    latency = args.latency_ms / 1000

    from tests.support.llm_server import LLMServer

    database(args.database, "create")
    judge = LLMServer(
        latency=args.judge_latency_ms / 1000,
        responder=responder,
        record=False,
        model="bench-judge",
    )
    judge.start()
    port = free_port()
    env = {
        "DATABASE_URL": f"{PG}/{args.database}",
        "SHERLOCK_WORKERS": "1",
        "SHERLOCK_JUDGE_BASE_URL": judge.url,
        "SHERLOCK_JUDGE_MODEL": "bench-judge",
        "SHERLOCK_RUN_CONCURRENCY": "16",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "WARNING",
        # A 5 MB answer is a transcript the server stores (its default item limit is 1 MiB).
        "SHERLOCK_UPLOAD_ITEM_MAX_BYTES": str(8 * 1024 * 1024),
    }
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    key = seed(args)
    from django.db import connections

    connections.close_all()
    child_env = {**os.environ, **env}
    processes = [
        start(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "sherlock.wsgi",
                "-w",
                str(args.web_workers),
                "-b",
                f"127.0.0.1:{port}",
                "--timeout",
                "120",
            ],
            child_env,
            "web",
        ),
        *(
            start([sys.executable, str(ROOT / "manage.py"), "qcluster"], child_env, f"q{n}")
            for n in range(2)
        ),
    ]
    try:
        wait_listening(port)
        time.sleep(2.0)  # the clusters' first poll
        from sherlock_client import Client

        url = f"http://127.0.0.1:{port}"
        with Client(url, key) as api:
            scoring_s, upload_s, uploaded, alone = scoring_alone(api, args)

        clients = {"this checkout": str(ROOT / "client")}
        if args.alternate:
            clients[args.alternate] = worktree(args.alternate)
        measured: dict[str, list[dict]] = {name: [] for name in clients}
        for round_ in range(args.rounds):
            for name, client_dir in clients.items():
                version = f"bench-{round_}-{name}"
                measured[name].append(client_run(url, key, client_dir, version, args))
    finally:
        for process in processes:
            stop(process)
        judge.stop()
        connections.close_all()
        database(args.database, "drop")
    calls = args.cases * args.reps
    spread = calls * latency / args.concurrency
    ideal = spread + scoring_s
    upload_tps = uploaded / upload_s if upload_s else 0.0
    print(
        f"{args.cases} cases x {args.reps} reps, task L={args.latency_ms} ms, "
        f"C={args.concurrency}, {args.checks} model checks (judge {args.judge_latency_ms} ms), "
        f"payload {args.payload} ({args.large} large), gunicorn x {args.web_workers}, "
        "2 qcluster workers, PostgreSQL"
    )
    print(
        f"scoring alone: {scoring_s:.2f} s for {uploaded} transcripts "
        f"(verdict {alone.get('outcome')}); upload alone: {upload_s:.2f} s = "
        f"{upload_tps:.0f} transcripts/s in batches of 500"
    )
    for reason in alone.get("reasons") or []:
        print(f"  the verdict's reason: {reason.get('detail')}")
    print(
        f"ideal: {ideal:.2f} s = N x k x L / C ({spread:.2f} s) + scoring alone ({scoring_s:.2f} s)"
    )
    for name, runs in measured.items():
        for done in runs:
            print(
                f"  {name}: wall {done['wall_s']:.2f} s ratio {done['wall_s'] / ideal:.3f}, "
                f"{done['outcome']}, {done['called']} calls, {done['accepted']} accepted, "
                f"{done['invalid']} invalid, {done['batches']} batches, calls+uploads "
                f"{done['calls_s']:.2f} s, {done['accepted'] / done['calls_s']:.0f} "
                "transcripts/s uploaded"
            )
    best = {name: min(r["wall_s"] for r in runs) for name, runs in measured.items()}
    walls = " ".join(f"wall_s[{name}]={wall:.2f}" for name, wall in best.items())
    ratio = best["this checkout"] / ideal
    print(
        f"ratio={ratio:.3f} ideal_s={ideal:.2f} scoring_s={scoring_s:.2f} "
        f"upload_tps={upload_tps:.0f} {walls}"
    )


def worktree(ref):
    """`ref`'s checkout beside this one (made once, kept for the next measure)."""
    path = Path(f"/tmp/sherlock-bench-{ref.replace('/', '_')}")
    if not path.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), ref], cwd=ROOT, check=True)
    return str(path / "client")


def client_run(url, key, client_dir, version, args):
    """One `evaluate` in a process of its own with `client_dir`'s client (bench/client_task.py)."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "client_task.py"),
            "--url",
            url,
            "--key",
            key,
            "--version",
            version,
            "--reps",
            str(args.reps),
            "--concurrency",
            str(args.concurrency),
            "--latency-ms",
            str(args.latency_ms),
            "--payload",
            args.payload,
            "--large",
            str(args.large),
        ],
        env={**os.environ, "PYTHONPATH": client_dir},
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the client run failed ({client_dir}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
