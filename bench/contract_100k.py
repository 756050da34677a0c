"""A run of 100,000 trials: its case results, contract and gate decision, and its pages.

Targets on this 2-core machine, PostgreSQL: finishing a run of 100,000 trials (10,000 cases x
10 repetitions, four checks each: 400,000 check results, 300,000 cost lines) takes under 2 s,
from `maybe_finish_run` (the case results, the run summary) through the `run_finished` signal
to governance's gate decision of the publish request waiting on it; and the run page, a page of
its results grid (the htmx partial, a later page and a filtered one) and the compare page
(against a second run of the same size) each answer in under 300 ms through Django's test
client, signed in. The number of queries of each of those must not grow with the trials: the
same work is measured first on runs ten times smaller (`--cases` / 10), and the counts are
printed side by side; they must be equal.

The rows are a fixture, not the engine's output: they are written straight into PostgreSQL with
COPY (`sherlock.core.bulk.insert_all`); the engine's execution is what `bench/run_throughput.py`
measures. Some trials are in error, some outcomes failed or unavailable, some checks failed in
some repetitions (flaky cases), one check is informative, one is the quality grader, every
trial has an agent cost line and two judge cost lines. Uses its own database (`--database`,
`sherlock_bench_100k` by default, created and dropped here) on the local PostgreSQL. Timings are the
median of `--repeat` runs. The last line is machine-readable:
``finish_s=S run_page_ms=M grid_ms=M compare_ms=M queries_constant=1``.

    .venv/bin/python bench/contract_100k.py [--cases 10000] [--reps 10] [--repeat 3]
        [--database sherlock_bench_100k]
"""

import argparse
import os
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run_throughput import PG, drop_database, recreate_database  # noqa: E402

DATABASE = "sherlock_bench_100k"
FINISH_TARGET_S = 2.0
PAGE_TARGET_MS = 300.0
CHECKS = [
    # label, kind, params, threshold, mode, quality grader
    ("Quality", "custom", {"criterion": "The answer solves the task."}, 0.7, "blocking", True),
    ("Tools", "tools_used", {}, 1.0, "blocking", False),
    ("Latency", "latency", {"max_ms": 2000}, 1.0, "blocking", False),
    ("Relevance", "answer_relevance", {}, None, "informative", False),
]


def setup_django(database=DATABASE):
    os.environ["DATABASE_URL"] = f"{PG}/{database}"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


# --- the fixture ------------------------------------------------------------------------------


def build_dataset(slug, cases):
    from django.utils import timezone

    from evaluations.models import Case, CaseVersion, Check, Dataset, DatasetVersion
    from sherlock.core.bulk import insert_all

    dataset = Dataset.objects.create(slug=slug, name=slug)
    version = DatasetVersion.objects.create(dataset=dataset, number=1)
    for position, (label, kind, params, threshold, mode, grader) in enumerate(CHECKS):
        check = Check(
            dataset_version=version,
            label=label,
            kind=kind,
            params=params,
            threshold=threshold,
            mode=mode,
            position=position,
            quality_grader=grader,
        )
        check.clean()
        check.save()
    insert_all(Case, ({"dataset_id": dataset.pk, "key": f"case-{i:05d}"} for i in range(cases)))
    case_ids = list(
        Case.objects.filter(dataset=dataset).order_by("key").values_list("pk", flat=True)
    )
    insert_all(
        CaseVersion,
        (
            {"dataset_version_id": version.pk, "case_id": pk, "input": f"Refund order {i}?"}
            for i, pk in enumerate(case_ids)
        ),
    )
    version.frozen_at = timezone.now()
    version.save(update_fields=["frozen_at"])
    return version


def build_run(agent_version, dataset_version, reps, salt):
    """A finished-but-not-finalized run: every trial done, case results not yet computed."""
    from django.utils import timezone

    from evaluations.costs.ledger import rebuild_daily_costs
    from evaluations.models import CaseVersion, Check, CheckResult, CostEntry, Run, Trial
    from sherlock.core.bulk import insert_all

    now = timezone.now()
    pairs = list(
        CaseVersion.objects.filter(dataset_version=dataset_version)
        .order_by("case__key")
        .values_list("case_id", "pk")
    )
    run = Run.objects.create(
        agent_version=agent_version,
        dataset_version=dataset_version,
        repetitions=reps,
        status="running",
        purpose="gate",
        comparability={"dataset_version": dataset_version.pk, "dataset_frozen": True},
        trials_total=len(pairs) * reps,
        trials_done=len(pairs) * reps,
        started_at=now,
    )

    def trial(n, case_id, case_version_id, repetition):
        error = (n * 7 + salt) % 211 == 0
        verdict = ("failed", "unavailable")[n % 2] if (n + salt) % 97 == 0 else "verified"
        return {
            "run_id": run.pk,
            "case_id": case_id,
            "case_version_id": case_version_id,
            "repetition": repetition,
            "status": "error" if error else "completed",
            "attempts": 1,
            "transcript": {"output": "Your refund is approved.", "cost_usd": 0.002},
            "error": "agent call failed: 500" if error else "",
            "latency_ms": 800.0 + n % 400,
            "prompt_tokens": 120,
            "completion_tokens": 20,
            "cost_usd": Decimal("0.002"),
            "billing_coverage": "billed",
            "declared_complete": not error,
            "outcome_verdict": "" if error else verdict,
            "progress": {"active_windows": 3, "windows_with_evidence_delta": 3 - (n % 5 == 0)},
            "tool_effects": [{"call": "refunds.create", "state": "verified"}],
            "active_windows": 3,
            "windows_with_evidence_delta": 3 - (n % 5 == 0),
            "effects_verified": 1,
            "started_at": now,
            "finished_at": now,
        }

    insert_all(
        Trial,
        (
            trial(i * reps + r, case_id, cv_id, r + 1)
            for i, (case_id, cv_id) in enumerate(pairs)
            for r in range(reps)
        ),
    )
    checks = list(Check.objects.filter(dataset_version=dataset_version).order_by("position"))
    trials = list(
        Trial.objects.filter(run=run).order_by("pk").values_list("pk", "status", "case_id")
    )

    def results():
        for n, (trial_id, status, case_id) in enumerate(trials):
            for check in checks:
                row = {"trial_id": trial_id, "check_config_id": check.pk, "blocking": True}
                row["threshold"] = check.threshold
                if status == "error":
                    row.update(status="error", score=None, reason="the agent call failed")
                elif check.mode == "informative":
                    row.update(status="scored", score=0.5 + (n % 50) / 100, blocking=False)
                elif check.label == "Quality":
                    # Some cases fail now and then (flaky), some always (failed).
                    score = 0.9 - (0.4 if (case_id + salt) % 13 == 0 and n % 3 == 0 else 0)
                    score -= 0.5 if (case_id + salt) % 101 == 0 else 0
                    row.update(status="passed" if score >= 0.7 else "failed", score=score)
                elif check.label == "Tools" and (case_id + salt) % 59 == 0:
                    row.update(status="failed", score=0.0, reason="refunds.create not called")
                else:
                    row.update(status="passed", score=1.0)
                yield row

    insert_all(CheckResult, results())

    def costs():
        base = {"day": now.date(), "agent_id": agent_version.agent_id, "run_id": run.pk}
        for trial_id, _status, _case in trials:
            yield {**base, "kind": "agent", "trial_id": trial_id, "usd": Decimal("0.002")}
            for model in ("judge-a", "judge-b"):
                yield {
                    **base,
                    "kind": "scoring",
                    "trial_id": trial_id,
                    "model": model,
                    "prompt_tokens": 400,
                    "completion_tokens": 30,
                    "usd": Decimal("0.0003"),
                }

    insert_all(CostEntry, costs())
    rebuild_daily_costs([run])  # the cost page's totals of the lines COPYed above
    return run


def build_pair(prefix, cases, reps, user):
    """Two runs of two versions of one agent on one dataset, and a publish request waiting on
    the candidate's run; returns (baseline run, candidate run, publish request)."""
    from django.db import connection

    from agents.models import Agent, AgentVersion
    from governance.models import PublishingPolicy, PublishRequest

    agent = Agent.objects.create(slug=f"{prefix}-bot", name=f"{prefix} bot")
    versions = [
        AgentVersion.objects.create(
            agent=agent, number=n, adapter="replay", config={"transcripts": {}}
        )
        for n in (1, 2)
    ]
    dataset_version = build_dataset(f"{prefix}-cases", cases)
    baseline = build_run(versions[0], dataset_version, reps, salt=0)
    candidate = build_run(versions[1], dataset_version, reps, salt=5)
    policy = PublishingPolicy.objects.create(
        name=f"{prefix} policy",
        agent=agent,
        max_false_successes=1000,
        max_unknown_effects=0,
        min_case_pass_rate=0.8,
    )
    request = PublishRequest.objects.create(
        agent_version=versions[1], requested_by=user, policy=policy, config_hash="bench"
    )
    request.runs.add(candidate)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return baseline, candidate, request


# --- the measures -----------------------------------------------------------------------------


def reset(run, request=None):
    """Back to "every trial done, nothing computed", so finishing can be measured again."""
    from evaluations.models import CaseResult, Run
    from governance.models import PublishRequest

    CaseResult.objects.filter(run=run).delete()
    Run.objects.filter(pk=run.pk).update(
        status="running", finalized_at=None, finished_at=None, summary={}
    )
    if request is not None:
        PublishRequest.objects.filter(pk=request.pk).update(
            state="evaluating", decision={}, decided_at=None
        )


def finish(run, request=None):
    """(seconds, queries) of `maybe_finish_run`, its `run_finished` receivers included."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evaluations.engine.completion import maybe_finish_run
    from governance.models import PublishRequest

    reset(run, request)
    with CaptureQueriesContext(connection) as queries:
        t0 = time.perf_counter()
        assert maybe_finish_run(run.pk)
        elapsed = time.perf_counter() - t0
    if request is not None:
        state = PublishRequest.objects.get(pk=request.pk).state
        assert state in ("passed", "blocked"), f"the request was not decided ({state})"
    return elapsed, len(queries)


def page(client, url, **headers):
    """(milliseconds, queries, bytes) of one GET through the test client."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        t0 = time.perf_counter()
        response = client.get(url, headers=headers)
        elapsed = (time.perf_counter() - t0) * 1000
    assert response.status_code == 200, (url, response.status_code)
    return elapsed, len(queries), len(response.content)


def measure(pair, client, repeat):
    """Median timings and query counts of finishing the candidate run and of its pages."""
    from django.urls import reverse

    baseline, candidate, request = pair
    finish(baseline)  # the baseline needs its case results for the compare page
    runs = [finish(candidate, request) for _ in range(repeat)]
    figures = {"finish": (statistics.median(s for s, _ in runs), runs[-1][1])}
    detail = reverse("evaluations:run-detail", args=[candidate.pk])
    grid = {"HX-Request": "true", "HX-Target": "grid"}
    urls = {
        "run page": (detail, {}),
        "grid page 50": (f"{detail}?show=all&page=50", grid),
        "grid failed": (f"{detail}?show=failed&check=Quality&page=2", grid),
        "compare": (f"{reverse('evaluations:compare')}?a={baseline.pk}&b={candidate.pk}", {}),
    }
    for name, (url, headers) in urls.items():
        page(client, url, **headers)  # warm: templates compiled, plans cached
        samples = [page(client, url, **headers) for _ in range(repeat)]
        figures[name] = (statistics.median(ms for ms, _, _ in samples), samples[-1][1])
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument(
        "--database", default=DATABASE, help="the PostgreSQL database to create (and drop)"
    )
    args = parser.parse_args()
    recreate_database(args.database)
    try:
        setup_django(args.database)
        from django.contrib.auth import get_user_model
        from django.test import Client

        admin = get_user_model().objects.create_superuser("bench-admin", password="x")
        client = Client()
        client.force_login(admin)
        sizes = [max(1, args.cases // 10), args.cases]
        results = {}
        for cases in sizes:
            t0 = time.perf_counter()
            pair = build_pair(f"n{cases}", cases, args.reps, admin)
            built = time.perf_counter() - t0
            trials = cases * args.reps
            print(
                f"fixture: 2 runs of {trials} trials ({4 * trials} check results each), "
                f"written in {built:.1f} s",
                flush=True,
            )
            results[trials] = measure(pair, client, args.repeat)
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            drop_database(args.database)

    small, big = (results[n * args.reps] for n in sizes)
    print(
        f"\nPostgreSQL, median of {args.repeat}; queries at {sizes[0] * args.reps} and "
        f"{sizes[1] * args.reps} trials"
    )
    print(f"{'':<40} {'time':>10} {'queries':>8} {'(smaller)':>10}")
    constant = True
    for name, (value, queries) in big.items():
        unit = f"{value:7.2f} s " if name == "finish" else f"{value:7.1f} ms"
        target = FINISH_TARGET_S if name == "finish" else PAGE_TARGET_MS
        ok = value < target
        constant &= queries == small[name][1]
        label = "finish: case results + contract + gate" if name == "finish" else name
        print(
            f"{label:<40} {unit:>10} {queries:>8} {small[name][1]:>10}  "
            f"{'within' if ok else 'OVER'} {target:g}{' s' if name == 'finish' else ' ms'}"
        )
    print(f"query counts {'constant' if constant else 'GROW'} with the trials")
    print(
        f"finish_s={big['finish'][0]:.2f} run_page_ms={big['run page'][0]:.0f} "
        f"grid_ms={max(big['grid page 50'][0], big['grid failed'][0]):.0f} "
        f"compare_ms={big['compare'][0]:.0f} queries_constant={int(constant)}"
    )


if __name__ == "__main__":
    main()
