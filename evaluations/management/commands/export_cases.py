"""`manage.py export_cases DATASET [--version N] --format jsonl|csv [-o FILE]`.

Writes a dataset version's cases in Sherlock's case JSONL or CSV (docs/cases.md), which
`import_cases` reads back as the same cases. Without `--version`: the draft if there is one,
else the latest frozen version. An unknown dataset or version exits with status 2.
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluations.cases_io import WRITE_FORMATS, export_cases, version_to_export
from evaluations.models import Dataset

USAGE_ERROR = 2


class Command(BaseCommand):
    help = "Export a dataset version's cases as Sherlock case JSONL or CSV."

    def add_arguments(self, parser):
        # `--version N` is the dataset's version here; Django's own `--version` (its release)
        # gives way, as in `gate`.
        parser._optionals.conflict_handler = "resolve"
        parser.add_argument("dataset", help="the dataset's slug")
        parser.add_argument(
            "--version",
            type=int,
            help="the version's number (default: the draft, else the latest frozen version)",
        )
        parser.add_argument("--format", choices=WRITE_FORMATS, default="jsonl", dest="fmt")
        parser.add_argument("--output", "-o", help="write to this file instead of stdout")

    def handle(self, *args, dataset, fmt, version=None, output=None, **options):

        found = Dataset.objects.filter(slug=dataset).first()
        if found is None:
            raise CommandError(f"no dataset {dataset!r}", returncode=USAGE_ERROR)
        chosen = version_to_export(found, version)
        if chosen is None:
            which = f"version {version}" if version is not None else "version"
            raise CommandError(f"dataset {dataset!r} has no {which}", returncode=USAGE_ERROR)
        text = export_cases(chosen, fmt)
        if output:
            Path(output).write_text(text, encoding="utf-8")
            count = chosen.case_versions.count()
            self.stderr.write(f"wrote {count} case(s) of {chosen} as {fmt} to {output}")
        else:
            self.stdout.write(text, ending="")
