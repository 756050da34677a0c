"""Does `LeanRepresentation` pay? The audit endpoints' CPU per request with and without it.

Seeds the same PostgreSQL database as `bench/api_load.py` (smaller by default), then measures
the CPU per request of every endpoint through the WSGI application in this process
(`api_load.cpu_per_endpoint`), alternating the audit serializer as shipped (with
`sherlock.core.api.serializers.LeanRepresentation`) and the same serializer on DRF's own
`ModelSerializer.to_representation`, `--rounds` times each, so that both are measured in one
run under the same load. Prints the medians; the last line is machine-readable:
`lean_ms=.. plain_ms=.. gain=..` for the audit list.

    .venv/bin/python bench/api_lean.py [--rounds 5] [--audit 5000]
"""

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import api_load  # noqa: E402
from bench.run_throughput import PG, drop_database, recreate_database  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--trial-runs", type=int, default=5)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--audit", type=int, default=5000)
    parser.add_argument("--database", default="sherlock_bench_lean")
    args = parser.parse_args()

    recreate_database(args.database)
    os.environ.update(
        {
            "DATABASE_URL": f"{PG}/{args.database}",
            "LOG_LEVEL": "WARNING",
            # Thousands of sequential requests per user: no throttle (the figure is CPU).
            "SHERLOCK_API_RATE": "1000000/min",
        }
    )
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    from rest_framework import serializers

    from governance.api import audit as views
    from governance.api.serializers import AuditEntrySerializer

    class PlainAuditEntrySerializer(serializers.ModelSerializer):
        actor = serializers.CharField(source="actor_repr")

        class Meta(AuditEntrySerializer.Meta):
            pass

    (viewset,) = [
        value
        for value in vars(views).values()
        if getattr(value, "serializer_class", None) is AuditEntrySerializer
    ]
    try:
        call_command("migrate", verbosity=0)
        ids = api_load.seed(args)
        spent = {"lean": [], "plain": []}
        for _ in range(args.rounds):
            for name, serializer in (
                ("lean", AuditEntrySerializer),
                ("plain", PlainAuditEntrySerializer),
            ):
                viewset.serializer_class = serializer
                spent[name].append(api_load.cpu_per_endpoint(ids))
        viewset.serializer_class = AuditEntrySerializer
        for endpoint in ("audit list", "audit detail"):
            lean = statistics.median(s[endpoint] for s in spent["lean"])
            plain = statistics.median(s[endpoint] for s in spent["plain"])
            print(
                f"{endpoint}: {lean:.2f} ms with LeanRepresentation, {plain:.2f} ms without "
                f"(median of {args.rounds}; load {os.getloadavg()[0]:.1f})"
            )
        lean = statistics.median(s["audit list"] for s in spent["lean"])
        plain = statistics.median(s["audit list"] for s in spent["plain"])
        print(f"lean_ms={lean:.3f} plain_ms={plain:.3f} gain={1 - lean / plain:.3f}")
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(args.database)


if __name__ == "__main__":
    main()
