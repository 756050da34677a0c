"""`manage.py contract FILE [--json]`: the five-metric release contract of a trial file.

Reads trial records from a file, either `{"thresholds": {...},
"trials": [...]}` or JSON Lines with one trial per line (then the thresholds declared with
the contract's worked example apply, and a note on stderr says so), and prints the contract table
(docs/contract.md), or with `--json` one object per variant. Bad input exits with status 2 and a
one-line message, never a traceback.
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluations.contract import (
    DEFAULT_THRESHOLDS,
    ContractInputError,
    compute_contract,
    load_document,
    render_table,
)
from sherlock.core.money import usd as money

# Exit status for unusable input, as argparse uses for bad usage.
INPUT_ERROR = 2


def _limit(amount):
    """A cost limit as the note says it: in dollars, or "no limit"."""
    return "no limit" if amount is None else money(amount, 2)


class Command(BaseCommand):
    help = "Compute the five-metric release contract of a trial-record file."

    # Reads a file and touches no database: the project's system checks (queues, database
    # settings) have nothing to say about it and must not stop an offline computation.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("file", help="trial records: {thresholds, trials} JSON or JSON Lines")
        parser.add_argument(
            "--json",
            action="store_true",
            dest="as_json",
            help="print a JSON array, one object per variant, instead of the table",
        )

    def handle(self, *args, file, as_json=False, **options):
        try:
            text = Path(file).read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(
                f"cannot read {file}: {exc.strerror or exc}", returncode=INPUT_ERROR
            ) from None
        except UnicodeDecodeError:
            raise CommandError(f"{file}: not UTF-8 text", returncode=INPUT_ERROR) from None

        try:
            document = load_document(text)
            results = compute_contract(document.trials, document.thresholds, document.locations)
        except ContractInputError as exc:
            raise CommandError(f"{file}: {exc}", returncode=INPUT_ERROR) from None
        if not results:
            raise CommandError(f"{file}: no trials", returncode=INPUT_ERROR)
        if document.thresholds is None:
            d = DEFAULT_THRESHOLDS
            self.stderr.write(
                "note: the file has no thresholds; using the default thresholds (the contract's "
                "worked example) "
                f"(max false successes {d.max_false_successes}, max unknown effects "
                f"{d.max_unknown_effects}, useful progress >= {d.min_useful_progress}, "
                f"tool-effect integrity >= {d.min_tool_effect_integrity}, cost per verified "
                f"outcome <= {_limit(d.max_cost_per_verified_outcome_usd)}, coverage required)"
            )

        if as_json:
            self.stdout.write(json.dumps([result.as_dict() for result in results], indent=2))
        else:
            self.stdout.write(render_table(results))
