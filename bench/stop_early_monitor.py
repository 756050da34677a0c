"""What reading a run's gates costs while it stops early, as the run grows.

`evaluations.engine.stopping.gates_so_far` is what a shard of a run that stops early asks every
`SHERLOCK_STOP_EARLY_SECONDS`: the run's cases in seed order with their states so far. It
aggregates the run's trials and blocking check results in the database, so its cost grows with
the trials; the shard's watcher waits at least five times as long as the last reading took
before it reads again (`evaluations.engine.shards`), so the reading never takes more than a
sixth of the database's time a shard gives it. This measures one reading on the fixture of
`bench/contract_100k.py` (written with COPY on the local PostgreSQL, 4 checks a trial, some
failing and flaky) at a tenth of the size and at full size: the median of `--repeat` readings,
and the queries (constant). The last line is machine-readable: `small_ms=… large_ms=…
queries=…`.

    .venv/bin/python bench/stop_early_monitor.py [--cases 10000] [--reps 10] [--repeat 5]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.contract_100k import build_pair, setup_django  # noqa: E402
from bench.run_throughput import drop_database, recreate_database  # noqa: E402

DATABASE = "sherlock_bench_monitor"


def reading(run, repeat):
    """(median ms, queries) of `gates_so_far(run)` for a run that stops early, still running."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evaluations.engine.stopping import gates_so_far
    from evaluations.models import Run

    Run.objects.filter(pk=run.pk).update(stop_early=True, seed=7, status="running")
    run = Run.objects.select_related("agent_version__agent").get(pk=run.pk)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            gates_so_far(run)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), len(queries)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--build-only", action="store_true", help="build the runs, measure none")
    args = parser.parse_args()
    recreate_database(DATABASE)
    try:
        setup_django(DATABASE)
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.create_superuser("bench-admin", password="x")
        figures = {}
        for name, cases in (("small", max(1, args.cases // 10)), ("large", args.cases)):
            _, run, _ = build_pair(f"m{cases}", cases, args.reps, user)
            if args.build_only:
                continue
            ms, queries = reading(run, args.repeat)
            figures[name] = (ms, queries)
            print(
                f"{cases} cases x {args.reps} repetitions: {ms:.0f} ms a reading, {queries} queries"
            )
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(DATABASE)
    if args.build_only:
        return
    print(
        f"small_ms={figures['small'][0]:.0f} large_ms={figures['large'][0]:.0f} "
        f"queries={figures['large'][1]}"
    )


if __name__ == "__main__":
    main()
