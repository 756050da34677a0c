"""`manage.py score_check --kind KIND --transcript T.json [--case C.json] [--params P.json]`.

Scores one transcript with one check, outside any run: the quickest way to try a check's
params on a real case before putting it in a dataset, and to reproduce a surprising result
from CI. Prints the verdict as JSON (`score`, `status`, `reason`, `evidence`, ...). Status is
`skipped` or `error` when the check could not score; otherwise `passed`/`failed` against
`--threshold`, or `scored` without one (no threshold, no pass bar). Bad params,
an unknown kind or unreadable files exit with status 2 and a one-line message on stderr.
Model checks use the configured judge, if any (else they are skipped, "no judge configured").
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluations.checks import REGISTRY, ParamsError, evaluate, validate_params
from sherlock.core import json_text

# Exit status for unusable input, as argparse uses for bad usage.
INPUT_ERROR = 2


def _judge():
    # Imported here, not at module level: the judge package is optional for this command, and
    # it imports Django models, which a pure check must not pull in.
    try:
        # Imported here: kept out: a pure check runs without Django's models (the judge imports
        # them).
        from evaluations.judge import get_default_judge
    except ImportError:
        return None
    return get_default_judge()


def _read_json(path: str | None, what: str, default):
    if path is None:
        return default
    try:
        value = json_text.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CommandError(
            f"cannot read {what} {path}: {exc.strerror or exc}", returncode=INPUT_ERROR
        ) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise CommandError(f"{what} {path} is not JSON: {exc}", returncode=INPUT_ERROR) from None
    if not isinstance(value, dict):
        raise CommandError(f"{what} {path} must hold a JSON object", returncode=INPUT_ERROR)
    return value


def _threshold(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = "Score one transcript with one check and print the verdict as JSON."

    # Reads files and, at most, asks the judge: the project's system checks (queues, database
    # settings) have nothing to say about it.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--kind",
            required=True,
            choices=list(REGISTRY),
            metavar="KIND",
            help="check kind: " + ", ".join(REGISTRY),
        )
        parser.add_argument("--params", help="JSON file with the check's params (default: {})")
        parser.add_argument("--case", help="JSON file with the case (see docs/checks.md)")
        parser.add_argument("--transcript", required=True, help="JSON file with the transcript")
        parser.add_argument(
            "--threshold",
            type=_threshold,
            help="pass bar in [0, 1]: status becomes passed or failed",
        )

    def handle(self, *args, kind, params=None, case=None, transcript, threshold=None, **options):
        try:
            checked = validate_params(kind, _read_json(params, "params", {}))
        except ParamsError as exc:
            raise CommandError(f"invalid params: {exc}", returncode=INPUT_ERROR) from None
        case_data = _read_json(case, "case", {})
        transcript_data = _read_json(transcript, "transcript", None)
        judge = _judge() if REGISTRY[kind].uses_model else None

        verdict = evaluate(kind, checked, case_data, transcript_data, judge=judge)
        status = verdict.outcome
        if status == "scored" and threshold is not None:
            status = "passed" if verdict.score >= threshold else "failed"
        result = {"kind": kind, "status": status, "threshold": threshold, **verdict.as_dict()}
        # Judge call records are opaque (they may be model rows): printed as their text.
        self.stdout.write(json.dumps(result, ensure_ascii=False, indent=2, default=str))
