"""`manage.py import_cases DATASET FILE [--format FORMAT] --user U [--dry-run]`.

Upserts the cases of FILE, by key, into the dataset's draft version through `ImportCases`
(the Editor role of `--user`, validation, one audit entry; a draft is started from the latest
frozen version when there is none). The format is detected from the file's name and content
unless named (docs/cases.md). Prints the counts (added, changed, unchanged); `--dry-run`
prints what would change and writes nothing.

The file is read as the API reads an upload (`cases_io.read_upload`): a file over the size
limit (`SHERLOCK_API_MAX_BODY_BYTES`) is refused by its size before it is read.

Exit status: 0 done; 1 the file has bad rows or cannot be read as text (each error printed
with its line or row and field; nothing written); 2 a usage error (unknown dataset or user,
unreadable, too large or empty file, unknown format, a user who may not edit the dataset).
"""

import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from evaluations.actions.import_cases import CasesInvalid, ImportCases
from evaluations.cases_io import READ_FORMATS, read_upload
from evaluations.models import Dataset
from sherlock.core.errors import ActionError

FILE_ERRORS = 1
USAGE_ERROR = 2


class Command(BaseCommand):
    help = "Import cases (Sherlock JSONL or CSV, OpenAI evals, Langfuse, promptfoo) into a draft."

    def add_arguments(self, parser):
        parser.add_argument("dataset", help="the dataset's slug")
        parser.add_argument("file", help="the cases file")
        parser.add_argument(
            "--format", choices=READ_FORMATS, dest="fmt", help="the file's format (default: detect)"
        )
        parser.add_argument("--user", required=True, help="who imports (an Editor of the dataset)")
        parser.add_argument(
            "--dry-run", action="store_true", help="show what would change; write nothing"
        )

    def handle(self, *args, dataset, file, user, fmt=None, dry_run=False, **options):

        found = Dataset.objects.filter(slug=dataset).first()
        if found is None:
            raise CommandError(f"no dataset {dataset!r}", returncode=USAGE_ERROR)
        acting_user = get_user_model().objects.filter(username=user).first()
        if acting_user is None:
            raise CommandError(f"no user {user!r}", returncode=USAGE_ERROR)
        try:
            with open(file, "rb") as handle:
                data = read_upload(handle, os.fstat(handle.fileno()).st_size)
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc}", returncode=USAGE_ERROR) from None
        except ActionError as exc:
            raise CommandError(f"{file}: {exc}", returncode=USAGE_ERROR) from None
        try:
            result = ImportCases(
                acting_user=acting_user,
                dataset=found,
                text=data,
                fmt=fmt,
                filename=file,
                dry_run=dry_run,
            ).execute()
        except CasesInvalid as exc:
            self.report_errors(file, exc.errors)
        except ActionError as exc:
            raise CommandError(f"{file}: {exc}", returncode=USAGE_ERROR) from None
        if result.errors:
            self.report_errors(file, result.errors)
        counts = result.counts()
        where = result.version or "a new draft"
        summary = (
            f"{counts['added']} added, {counts['changed']} changed, "
            f"{counts['unchanged']} unchanged ({result.format})"
        )
        if dry_run:
            self.stdout.write(f"dry run, nothing written: {where}: {summary}")
            for key in result.added:
                self.stdout.write(f"  added    {key}")
            for key, fields in result.changed.items():
                self.stdout.write(f"  changed  {key}: {', '.join(fields)}")
        else:
            started = result.started_words()
            self.stdout.write(f"{where}{started}: {summary}")

    def report_errors(self, file, errors):
        for error in errors:
            self.stderr.write(f"{file}: {error}")
        raise CommandError(
            f"{file}: {len(errors)} error(s), nothing imported", returncode=FILE_ERRORS
        )
