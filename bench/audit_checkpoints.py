"""What audit checkpoints cost, on a fresh SQLite database (a temp file,
migrated):

- ``write``: `write_checkpoint` with the head moved since the last one (the head read, the file
  locked, its last line read backwards, one line appended and fsynced), per call;
- ``skip``: the same call when the head has not moved (what the schedule's tick costs most
  minutes), per call;
- ``verify``: `verify_checkpoints` of a file of K checkpoints against a log of N entries (every
  line's signature, then the entries it signed, fetched 500 at a time and re-hashed);

against the reference every verification already pays, `verify_chain` over the same N entries.
The log is written with `bulk_create` (the chain computed here), since `audit()` one entry at a
time is not what is measured. The last line is machine-readable:
``write_ms=W skip_ms=S verify_s=V chain_s=C ratio=R``.

    .venv/bin/python bench/audit_checkpoints.py [--entries 50000] [--checkpoints 5000]
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KEY = "bench-audit-key-of-at-least-thirty-two-characters"


def setup_django(tmp):
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ["SHERLOCK_AUDIT_KEY"] = KEY
    os.environ["SHERLOCK_AUDIT_CHECKPOINT_FILE"] = str(tmp / "checkpoints.jsonl")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def build_log(count):
    """`count` chained entries after the migrations' own, as `audit()` would write them."""
    from django.utils import timezone

    from governance.models import AuditEntry
    from governance.models.audit import GENESIS_HASH

    last = AuditEntry.objects.order_by("-sequence").values("sequence", "hash").first()
    prev, seq = (last["hash"], last["sequence"]) if last else (GENESIS_HASH, 0)
    rows, now = [], timezone.now()
    for n in range(count):
        seq += 1
        entry = AuditEntry(
            sequence=seq,
            at=now,
            action="bench.entry",
            target_type="agents.agent",
            target_id=str(n % 97),
            target_repr=f"agent {n % 97}",
            before={"n": n - 1},
            after={"n": n, "note": "a change worth a line"},
            reason="bench",
            prev_hash=prev,
        )
        entry.hash = entry.compute_hash()
        prev = entry.hash
        rows.append(entry)
    AuditEntry.objects.bulk_create(rows, batch_size=2000)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=50000)
    parser.add_argument("--checkpoints", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=200, help="write/skip calls timed")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        setup_django(tmp)
        from django.conf import settings

        from governance.audit.checkpoints import (
            make_checkpoint,
            to_line,
            verify_checkpoints,
            write_checkpoint,
        )
        from governance.models import AuditEntry, verify_chain
        from sherlock.core.audit import audit

        build_log(args.entries)
        # A file of K checkpoints spread over the log, as a schedule would have left it.
        step = max(1, args.entries // args.checkpoints)
        signed = AuditEntry.objects.order_by("sequence").values_list("sequence", "hash")
        path = settings.SHERLOCK_AUDIT_CHECKPOINT_FILE
        with open(path, "w") as out:
            for i, (seq, entry_hash) in enumerate(signed.iterator(chunk_size=5000)):
                if i % step == step - 1:
                    out.write(to_line(make_checkpoint(seq, entry_hash, KEY)))
        lines = path.read_text().count("\n")

        started = time.perf_counter()
        checked, broken, _ = verify_chain()
        chain_s = time.perf_counter() - started
        assert broken is None

        started = time.perf_counter()
        with open(path) as handle:
            report = verify_checkpoints(handle)
        verify_s = time.perf_counter() - started
        assert report.ok, report.problems[:3]

        write_s = 0.0
        for _ in range(args.calls):
            audit("bench.move")
            started = time.perf_counter()
            assert write_checkpoint().checkpoint is not None
            write_s += time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(args.calls):
            assert write_checkpoint().checkpoint is None
        skip_s = time.perf_counter() - started

        write_ms = write_s / args.calls * 1000
        skip_ms = skip_s / args.calls * 1000
        print(
            f"log: {checked} entries; checkpoint file: {lines} lines, {path.stat().st_size} bytes"
        )
        print(f"write   {write_ms:8.2f} ms per checkpoint (head moved; includes fsync)")
        print(f"skip    {skip_ms:8.2f} ms per tick (head not moved)")
        print(
            f"verify  {verify_s:8.2f} s for {lines} checkpoints "
            f"({verify_s / lines * 1e6:.0f} us each)"
        )
        print(f"chain   {chain_s:8.2f} s for {checked} entries (verify_chain, the reference)")
        print(
            f"write_ms={write_ms:.2f} skip_ms={skip_ms:.2f} verify_s={verify_s:.2f} "
            f"chain_s={chain_s:.2f} ratio={verify_s / chain_s:.2f}"
        )


if __name__ == "__main__":
    main()
