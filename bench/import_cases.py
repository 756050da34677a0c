"""Case import speed: 10,000 cases under 10 s on SQLite, end to end.

Builds a Sherlock case JSONL file of N cases (input, expected output, two contexts, an expected
tool, tags, and a per-check override on every tenth), then on a fresh SQLite database (a temp
file, migrated) measures `ImportCases` end to end (reading the file, validating every row as
an admin or API edit is validated, writing, the audit entry):

- ``import``: into a dataset with a frozen version of one case, so a draft is started;
- ``re-import``: the same file with every input changed (the update path);
- ``dry run``: the preview of that file, writing nothing.

References in the same run: the ORM's floor, a bare ``bulk_create`` of the same Case and
CaseVersion rows with no reading or validation, and one `CreateCase` action per case (what an
import without batching costs), measured on 300 cases and scaled to N. The last line is
machine-readable: ``import_s=S target_s=10 floor_ratio=R``.

    .venv/bin/python bench/import_cases.py [--cases 10000]
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_S = 10.0
PER_CASE_SAMPLE = 300


def setup_django(db_path):
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def case(i, variant=""):
    row = {
        "key": f"case-{i:05d}",
        "input": f"How do I get a refund for order {i}?{variant}",
        "expected": {"output": f"Refund for order {i} is approved automatically."},
        "contexts": ["Refunds under $50 are automatic.", f"Order {i} cost ${i % 90}."],
        "expected_tools": [{"name": "kb.search"}],
        "tags": ["refunds", f"batch-{i % 7}"],
    }
    if i % 10 == 0:
        row["overrides"] = {"Tools": {"threshold": 0.5}}
    return row


def jsonl(rows):
    return "".join(json.dumps(row) + "\n" for row in rows)


def timed(work):
    t0 = time.perf_counter()
    result = work()
    return time.perf_counter() - t0, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    n = args.cases
    with tempfile.TemporaryDirectory() as tmp:
        setup_django(Path(tmp) / "bench.sqlite3")
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Group
        from django.db import transaction
        from django.utils import timezone

        from evaluations.actions.create_case import CreateCase
        from evaluations.actions.import_cases import ImportCases
        from evaluations.models import Case, CaseVersion, Check, Dataset, DatasetVersion

        editor = get_user_model().objects.create_user("bench-editor", is_staff=True)
        editor.groups.add(Group.objects.get(name="Editor"))

        def dataset(slug):
            ds = Dataset.objects.create(slug=slug, name=slug)
            version = DatasetVersion.objects.create(dataset=ds, number=1)
            check = Check(dataset_version=version, label="Tools", kind="tools_used", params={})
            check.clean()
            check.save()
            key = Case.objects.create(dataset=ds, key="seed")
            CaseVersion.objects.create(dataset_version=version, case=key, input="seed")
            version.frozen_at = timezone.now()
            version.save(update_fields=["frozen_at"])
            return ds

        text = jsonl(case(i) for i in range(n))
        changed = jsonl(case(i, " (edited)") for i in range(n))
        target = dataset("bench")
        imported_s, result = timed(
            lambda: ImportCases(acting_user=editor, dataset=target, text=text).execute()
        )
        assert len(result.added) == n and not result.errors, result.counts()
        reimport_s, result = timed(
            lambda: ImportCases(acting_user=editor, dataset=target, text=changed).execute()
        )
        assert len(result.changed) == n, result.counts()
        dry_s, result = timed(
            lambda: ImportCases(
                acting_user=editor, dataset=target, text=text, dry_run=True
            ).execute()
        )
        assert len(result.changed) == n, result.counts()

        # The ORM's floor: the same rows, no reading, no validation, no audit.
        floor_ds = dataset("floor")
        draft = DatasetVersion.objects.create(dataset=floor_ds, number=2)
        rows = [case(i) for i in range(n)]

        def floor():
            with transaction.atomic():
                Case.objects.bulk_create(
                    [Case(dataset=floor_ds, key=r["key"]) for r in rows], batch_size=500
                )
                ids = dict(Case.objects.filter(dataset=floor_ds).values_list("key", "pk"))
                CaseVersion.objects.bulk_create(
                    [
                        CaseVersion(
                            dataset_version=draft,
                            case_id=ids[r["key"]],
                            **{k: v for k, v in r.items() if k != "key"},
                        )
                        for r in rows
                    ],
                    batch_size=500,
                )

        floor_s, _ = timed(floor)

        # One action per case, as 10,000 API calls would do (without the HTTP), on a sample.
        per_ds = dataset("per-case")
        per_draft = DatasetVersion.objects.create(dataset=per_ds, number=2)

        def per_case():
            for r in rows[:PER_CASE_SAMPLE]:
                fields = {k: v for k, v in r.items() if k != "key"}
                fields.pop("overrides", None)  # the sample's draft has no check to override
                CreateCase(
                    acting_user=editor, dataset_version=per_draft, key=r["key"], **fields
                ).execute()

        per_case_s, _ = timed(per_case)
        per_case_n = per_case_s * n / PER_CASE_SAMPLE

    size_mb = len(text.encode()) / 1e6
    print(f"{n} cases, Sherlock case JSONL of {size_mb:.1f} MB, SQLite")
    print(f"{'import (new draft, all added)':<40} {imported_s:7.2f} s")
    print(f"{'re-import (every case changed)':<40} {reimport_s:7.2f} s")
    print(f"{'dry run (preview, nothing written)':<40} {dry_s:7.2f} s")
    print(f"{'reference: bare bulk_create floor':<40} {floor_s:7.2f} s")
    print(f"{'reference: one CreateCase per case':<40} {per_case_n:7.2f} s (scaled from 300)")
    verdict = "within" if max(imported_s, reimport_s) < TARGET_S else "OVER"
    print(
        f"target {TARGET_S:.0f} s: {verdict}; import / floor = {imported_s / floor_s:.2f}, "
        f"one action per case / import = {per_case_n / imported_s:.1f}"
    )
    print(
        f"import_s={imported_s:.2f} reimport_s={reimport_s:.2f} target_s={TARGET_S:.0f} "
        f"floor_ratio={imported_s / floor_s:.2f}"
    )


if __name__ == "__main__":
    main()
