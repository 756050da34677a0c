"""Every admin page and every Sherlock page at scale: a dataset version of 10,000 cases and a run
of 100,000 trials.

Target on this 2-core machine: every page answers in under 300 ms of server time (through
Django's test client, signed in as the demo's Admin), and no page's number of queries grows
with the rows. Two worlds are built, each in its own database and its own process: a small one
(``--small`` cases) and the big one (``--cases``), each the demo (`seed_demo`: every kind of
governance row, schedules, policies, publish requests, audit entries) plus a bench agent with
two versions, a frozen dataset version of N cases (four checks) and two finished runs of N x
``--reps`` trials on it (four check results each, three cost lines each, case results computed by
the engine's `maybe_finish_run`), a judge call per trial of the first cases, hand labels on
some results and a publish request waiting on the candidate run. The rows are a fixture written
with `sherlock.core.bulk.insert_all` (COPY on PostgreSQL), as `bench/contract_100k.py` writes
them.

Then every page is requested: for every model registered in the admin, its changelist, its add
page (when the Admin may add) and the change page of one row, chosen among the bench's big rows
(the big run, its trials and results, the 10,000-case version, a check of it, ...); and every
Sherlock page: runs, start a run, the run page and its grid, a trial page, compare, trends,
costs, labels, calibration, schedules, the publish page and the audit page. Each is warmed once,
then timed ``--repeat`` times (the median is printed) with its number of queries, which must be
the same in both worlds. The last line is machine-readable:
``pages=N over_300ms=K queries_grow=G worst_ms=M``.

    .venv/bin/python bench/pages_scale.py [--cases 10000] [--reps 10] [--small 100]
        [--repeat 3] [--postgres] [--only SUBSTRING] [--workdir DIR]
"""

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_MS = 300.0
DATABASE = "sherlock_bench_pages"
# Rows that anchor the change page chosen for each model: a row of the model itself, else one
# whose foreign key points at the first anchor it has (a trial of the big run, ...).
ANCHOR_ORDER = ["Run", "Trial", "DatasetVersion", "Dataset", "AgentVersion", "Agent"]


def setup_django(database_url):
    os.environ["DATABASE_URL"] = database_url
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django

    django.setup()


# --- the world --------------------------------------------------------------------------------


def build_world(cases, reps):
    """The demo, plus the bench's agent, dataset version and runs; returns the anchors."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from bench.contract_100k import build_pair
    from evaluations.engine.completion import maybe_finish_run
    from evaluations.models import Check, CheckResult, HumanLabel, JudgeCall, Trial
    from sherlock.core.bulk import insert_all

    call_command("migrate", verbosity=0)
    call_command("seed_demo", stdout=io.StringIO())
    admin = get_user_model().objects.get(username="admin")
    baseline, candidate, request = build_pair("bench", cases, reps, admin)
    for run in (baseline, candidate):
        assert maybe_finish_run(run.pk), f"run {run.pk} did not finish"
    # A judge call for each trial of the first 1 % of cases, tied to its run and trial.
    now = timezone.now()
    trials = list(
        Trial.objects.filter(run=candidate)
        .order_by("pk")
        .values_list("pk", flat=True)[: max(1, cases // 100) * reps]
    )
    insert_all(
        JudgeCall,
        (
            {
                "created_at": now,
                "model": "judge-a",
                "rubric_id": "custom",
                "prompt_hash": f"{n:064x}",
                "cache_key": f"{n:064x}",
                "request": {"messages": [{"role": "user", "content": "Is it solved?"}]},
                "response": {"verdict": "yes"},
                "raw_answer": '{"score": 0.9}',
                "prompt_tokens": 400,
                "completion_tokens": 30,
                "usd": Decimal("0.0003"),
                "run_id": candidate.pk,
                "trial_id": pk,
            }
            for n, pk in enumerate(trials)
        ),
    )
    # Hand labels on 1 % of the model check's results: the labels queue and calibration.
    quality = Check.objects.get(dataset_version=candidate.dataset_version, label="Quality")
    results = list(
        CheckResult.objects.filter(trial__run=candidate, check_config=quality)
        .order_by("pk")
        .values_list("pk", "status")[: max(1, cases * reps // 100)]
    )
    insert_all(
        HumanLabel,
        (
            {
                "check_result_id": pk,
                "labeled_by_id": admin.pk,
                "passed": status == "passed",
                "calibration_key": quality.calibration_key,
            }
            for pk, status in results
        ),
    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return {"admin": admin, "baseline": baseline, "candidate": candidate, "request": request}


def load_world():
    """The world a previous run of the bench built (``--workdir``), as `build_world` returns it."""
    from django.contrib.auth import get_user_model

    from evaluations.models import HumanLabel, Run
    from governance.models import PublishRequest

    runs = Run.objects.filter(agent_version__agent__slug="bench-bot")
    candidate = runs.get(agent_version__number=2)
    # The last rows `build_world` writes: a world whose build was cut short is built anew.
    assert HumanLabel.objects.filter(check_result__trial__run=candidate).exists()
    return {
        "admin": get_user_model().objects.get(username="admin"),
        "baseline": runs.get(agent_version__number=1),
        "candidate": candidate,
        "request": PublishRequest.objects.get(agent_version=candidate.agent_version),
    }


def anchors_of(world):
    """The rows a change page is chosen by, per model name."""
    run = world["candidate"]
    version = run.dataset_version
    return {
        "Run": run,
        "Trial": run.trials.order_by("-pk").first(),
        "DatasetVersion": version,
        "Dataset": version.dataset,
        "AgentVersion": run.agent_version,
        "Agent": run.agent_version.agent,
    }


def change_object(model, anchors):
    """A row of ``model`` tied to the big rows if it can be, else its newest row."""
    name = model.__name__
    if name in anchors:
        return anchors[name]
    rows = model._default_manager.all()
    fks = {
        f.related_model.__name__: f.name
        for f in model._meta.concrete_fields
        if f.is_relation and f.related_model is not None
    }
    for anchor in ANCHOR_ORDER:
        if anchor in fks:
            row = rows.filter(**{fks[anchor]: anchors[anchor]}).order_by("-pk").first()
            if row is not None:
                return row
    return rows.order_by("-pk").first()


# --- the pages --------------------------------------------------------------------------------


def admin_pages(world, client):
    """(name, url, headers) of every registered model's changelist, add and change pages."""
    from django.contrib import admin
    from django.test import RequestFactory
    from django.urls import reverse

    request = RequestFactory().get("/admin/")
    request.user = world["admin"]
    anchors = anchors_of(world)
    pages = []
    for model, model_admin in sorted(
        admin.site._registry.items(), key=lambda item: item[0]._meta.label
    ):
        opts = model._meta
        prefix = f"admin:{opts.app_label}_{opts.model_name}"
        label = f"admin {opts.app_label}.{opts.model_name}"
        if not model_admin.has_view_or_change_permission(request):
            continue
        pages.append((f"{label} list", reverse(f"{prefix}_changelist"), {}))
        if model_admin.has_add_permission(request):
            pages.append((f"{label} add", reverse(f"{prefix}_add"), {}))
        obj = change_object(model, anchors)
        if obj is not None:
            pages.append((f"{label} change", reverse(f"{prefix}_change", args=[obj.pk]), {}))
    return pages


def sherlock_pages(world):
    """(name, url, headers) of every page of Sherlock's own, on the big rows."""
    from django.urls import reverse

    from evaluations.models import Check

    run, baseline = world["candidate"], world["baseline"]
    detail = reverse("evaluations:run-detail", args=[run.pk])
    grid = {"HX-Request": "true", "HX-Target": "grid"}
    key = run.trials.order_by("-pk").values_list("case__key", flat=True).first()
    agent = run.agent_version.agent
    dataset = run.dataset_version.dataset
    quality = Check.objects.get(dataset_version=run.dataset_version, label="Quality")
    return [
        ("runs", reverse("evaluations:run-list"), {}),
        ("start a run", reverse("evaluations:start-run"), {}),
        ("run page", detail, {}),
        ("run grid, page 50", f"{detail}?show=all&page=50", grid),
        ("run grid, failed", f"{detail}?show=failed&check=Quality&page=2", grid),
        ("trial page", reverse("evaluations:trial-detail", args=[run.pk, key]), {}),
        ("compare", f"{reverse('evaluations:compare')}?a={baseline.pk}&b={run.pk}", {}),
        (
            "trends",
            f"{reverse('evaluations:trends')}?agent={agent.slug}&dataset={dataset.slug}",
            {},
        ),
        ("costs", reverse("evaluations:costs"), {}),
        ("labels", f"{reverse('evaluations:labels')}?dataset={dataset.slug}", {}),
        ("calibration", reverse("evaluations:calibration", args=[quality.pk]), {}),
        ("schedules", reverse("evaluations:schedules"), {}),
        ("publish page", reverse("governance:publish", args=[run.agent_version.pk]), {}),
        ("audit", reverse("governance:audit"), {}),
        ("publish list", f"{reverse('governance:versions')}?agent={agent.slug}", {}),
        ("compare picker", reverse("evaluations:compare"), {}),
        ("people", reverse("people:people"), {}),
        ("production", reverse("production:agent", args=[agent.slug]), {}),
        ("online rule", reverse("production:online-rule", args=[agent.slug]), {}),
        ("traces", f"{reverse('production:trace-list')}?agent={agent.slug}", {}),
        # The pickers' answers, as a person types: every run, a dataset's versions.
        ("pick runs", f"{reverse('pick', args=['run'])}?term={agent.slug}", {}),
        ("pick runs, page 2", f"{reverse('pick', args=['run'])}?page=2", {}),
        ("pick dataset versions", f"{reverse('pick', args=['dataset-version'])}?term=v1", {}),
    ]


def request_page(client, url, headers):
    """(milliseconds, queries, bytes, status) of one GET through the test client."""
    from django.db import connection

    queries = []

    def count(execute, sql, params, many, context):
        # Counted, not logged: Django's query log keeps only the last 9,000.
        queries.append(1)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        t0 = time.perf_counter()
        response = client.get(url, headers=headers)
        elapsed = (time.perf_counter() - t0) * 1000
    return elapsed, len(queries), len(response.content), response.status_code


def measure(world, repeat, only):
    from django.test import Client

    client = Client()
    client.force_login(world["admin"])
    figures = {}
    for name, url, headers in sherlock_pages(world) + admin_pages(world, client):
        if only and only not in name:
            continue
        request_page(client, url, headers)  # warm: templates compiled, plans cached
        samples = [request_page(client, url, headers) for _ in range(repeat)]
        ms = statistics.median(s[0] for s in samples)
        _, queries, size, status = samples[-1]
        figures[name] = {"url": url, "ms": ms, "queries": queries, "bytes": size, "status": status}
    return figures


# --- the two worlds ---------------------------------------------------------------------------


def world_main(args):
    """In a child process: build one world, measure it, write the figures as JSON."""
    reuse = args.keep and (args.postgres or Path(args.database).exists())
    if args.postgres:
        from bench.run_throughput import PG, recreate_database

        if not args.keep:
            recreate_database(args.database)
        setup_django(f"{PG}/{args.database}")
    else:
        setup_django(f"sqlite:///{args.database}")
    t0 = time.perf_counter()
    if reuse:
        try:
            world = load_world()
        except Exception:
            reuse = False
    if not reuse and args.keep:
        from django.db import connections

        connections.close_all()
        if args.postgres:
            recreate_database(args.database)
        else:
            for suffix in ("", "-wal", "-shm"):
                Path(args.database + suffix).unlink(missing_ok=True)
    if not reuse:
        world = build_world(args.world, args.reps)
        built = time.perf_counter() - t0
        print(
            f"world of {args.world} cases, {2 * args.world * args.reps} trials: "
            f"built in {built:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    load = os.getloadavg()[0]
    figures = measure(world, args.repeat, args.only)
    figures["_load"] = {"before": load, "after": os.getloadavg()[0]}
    Path(args.out).write_text(json.dumps(figures))
    if args.postgres and not args.keep:
        from django.db import connections

        from bench.run_throughput import drop_database

        connections.close_all()
        drop_database(args.database)


def run_world(args, cases, workdir):
    out = Path(workdir) / f"figures-{cases}.json"
    database = (
        f"{args.database}_{cases}" if args.postgres else str(Path(workdir) / f"world-{cases}.db")
    )
    command = [
        sys.executable,
        __file__,
        "--world",
        str(cases),
        "--reps",
        str(args.reps),
        "--repeat",
        str(args.repeat),
        "--database",
        database,
        "--out",
        str(out),
        *(["--postgres"] if args.postgres else []),
        *(["--keep"] if args.keep else []),
        *(["--only", args.only] if args.only else []),
    ]
    subprocess.run(command, check=True)
    return json.loads(out.read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=100, help="cases of the small world")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", action="store_true", help="the local PostgreSQL")
    parser.add_argument("--database", default=DATABASE, help="the PostgreSQL database prefix")
    parser.add_argument("--only", default="", help="only the pages whose name has this")
    parser.add_argument(
        "--workdir",
        help="keep the worlds' databases here (SQLite files; on PostgreSQL the databases are "
        "kept) and use them again when they exist, to measure changed code without rebuilding",
    )
    parser.add_argument("--keep", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--world", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.world is not None:
        world_main(args)
        return
    if args.workdir:
        args.keep = True
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        small = run_world(args, args.small, args.workdir)
        big = run_world(args, args.cases, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="pages-scale-") as workdir:
            small = run_world(args, args.small, workdir)
            big = run_world(args, args.cases, workdir)

    engine = "PostgreSQL" if args.postgres else "SQLite"
    load = big.pop("_load")
    small.pop("_load")
    print(
        f"\n{engine}, median of {args.repeat}; queries at {args.small} and {args.cases} cases "
        f"({args.small * args.reps} and {args.cases * args.reps} trials a run); load average "
        f"{load['before']:.1f} to {load['after']:.1f} on {os.cpu_count()} cores while the big "
        "world was measured"
    )
    print(f"{'page':<52} {'ms':>8} {'queries':>8} {'(small)':>8} {'KB':>7}")
    over, grow = [], []
    for name, page in big.items():
        before = small.get(name, {}).get("queries")
        flags = []
        if page["status"] != 200:
            flags.append(f"HTTP {page['status']}")
        if page["ms"] >= TARGET_MS:
            over.append(name)
            flags.append(f"OVER {TARGET_MS:g} ms")
        if before is not None and page["queries"] != before:
            grow.append(name)
            flags.append("queries GROW")
        print(
            f"{name:<52} {page['ms']:8.1f} {page['queries']:8d} {before!s:>8} "
            f"{page['bytes'] / 1024:7.0f}  {' '.join(flags)}"
        )
    worst = max(big.values(), key=lambda p: p["ms"])["ms"] if big else 0
    print(f"{len(over)} pages over {TARGET_MS:g} ms; {len(grow)} whose queries grow")
    print(f"pages={len(big)} over_300ms={len(over)} queries_grow={len(grow)} worst_ms={worst:.0f}")


if __name__ == "__main__":
    main()
