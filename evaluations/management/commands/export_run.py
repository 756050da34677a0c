"""`manage.py export_run RUN [--format F] [--output FILE]`: a run's results for CI and other tools.

Formats:

- ``trials``: the run's trial records, JSON Lines. ``manage.py contract`` on
  the file gives the numbers of ``run_contract`` (the same contract for runs and for
  records). Judge spend bound to the run but to no trial cannot go in a record: stderr says so.
- ``jsonl``: one line per trial with its status, evidence, cost and check results.
- ``csv``: one row per check result (run, case, repetition, check, status, score, threshold,
  blocking, reason), for spreadsheets; a cell a spreadsheet would run (a reason starting
  with ``=``) gets a ``'`` ahead (``sherlock.core.csv_cells``, docs/cases.md).
- ``junit``: JUnit XML for CI test reports, the API's and the client's
  (``evaluations.reads.junit``): one test case per case (failed, flaky as a failure, unscored as
  an error with its reason) and a ``verdict`` test case that fails unless the run's verdict
  passed.
- ``otlp``: OpenTelemetry traces as OTLP/JSON (``evaluations.engine.otel``).

An unknown run exits with status 2 and a one-line message.
"""

import io
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from evaluations.contract.records import run_records
from evaluations.costs.ledger import unattributed_judge_spend
from evaluations.costs.texts import format_usd
from evaluations.engine.otel import run_to_otlp
from evaluations.models import CheckResult, Run
from evaluations.reads.junit import run_junit
from evaluations.verdict import run_verdict
from sherlock.core.csv_cells import SafeWriter

FORMATS = ("trials", "jsonl", "csv", "junit", "otlp")
INPUT_ERROR = 2


def _json_line(obj):
    return json.dumps(obj, default=str, sort_keys=False)


class Command(BaseCommand):
    help = "Export a run as trial records, JSONL, CSV, JUnit XML or OpenTelemetry (OTLP JSON)."

    def add_arguments(self, parser):
        parser.add_argument("run", type=int, help="the run's id")
        parser.add_argument("--format", choices=FORMATS, default="jsonl", dest="fmt")
        parser.add_argument("--output", "-o", help="write to this file instead of stdout")

    def handle(self, *args, run, fmt, output=None, **options):

        found = (
            Run.objects.select_related("agent_version__agent", "dataset_version__dataset")
            .filter(pk=run)
            .first()
        )
        if found is None:
            raise CommandError(f"no run #{run}", returncode=INPUT_ERROR)
        text = getattr(self, f"export_{fmt}")(found)
        if output:
            Path(output).write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote {fmt} export of run #{found.pk} to {output}")
        else:
            self.stdout.write(text, ending="")

    def export_trials(self, run):

        usd, unpriced = unattributed_judge_spend(run)
        if usd or unpriced:
            self.stderr.write(
                f"note: {format_usd(usd)} of judge spend ({unpriced} unpriced call(s)) belongs "
                "to the run but to no trial, so it is not in these records; run_contract counts it"
            )
        return "".join(_json_line(record) + "\n" for record in run_records(run))

    def _trials(self, run):

        results: dict[Any, Any] = {}
        for result in (
            CheckResult.objects.filter(trial__run=run)
            .select_related("check_config")
            .order_by("check_config__position", "check_config__label")
        ):
            results.setdefault(result.trial_id, []).append(result)
        trials = run.trials.select_related("case").order_by("case__key", "repetition")
        return [(trial, results.get(trial.pk, [])) for trial in trials]

    def export_jsonl(self, run):
        lines = []
        for trial, results in self._trials(run):
            lines.append(
                _json_line(
                    {
                        "run": run.pk,
                        "case": trial.case.key,
                        "repetition": trial.repetition,
                        "status": trial.status,
                        "error": trial.error or None,
                        "latency_ms": trial.latency_ms,
                        "cost_usd": trial.cost_usd,
                        "billing_coverage": trial.billing_coverage,
                        "declared_complete": trial.declared_complete,
                        "outcome_verdict": trial.outcome_verdict or None,
                        "outcome_evidence": trial.outcome_evidence,
                        "tool_effects": trial.tool_effects,
                        "checks": {
                            r.check_config.label: {
                                "status": r.status,
                                "score": r.score,
                                "threshold": r.threshold,
                                "blocking": r.blocking,
                                "reason": r.reason,
                            }
                            for r in results
                        },
                    }
                )
            )
        return "".join(line + "\n" for line in lines)

    def export_csv(self, run):
        buffer = io.StringIO()
        writer = SafeWriter(buffer)  # a reason or a key starting with `=` is not run
        writer.writerow(
            [
                "run",
                "case",
                "repetition",
                "check",
                "status",
                "score",
                "threshold",
                "blocking",
                "reason",
            ]
        )
        for trial, results in self._trials(run):
            for r in results:
                writer.writerow(
                    [
                        run.pk,
                        trial.case.key,
                        trial.repetition,
                        r.check_config.label,
                        r.status,
                        "" if r.score is None else r.score,
                        "" if r.threshold is None else r.threshold,
                        "yes" if r.blocking else "no",
                        r.reason,
                    ]
                )
        return buffer.getvalue()

    def export_junit(self, run):

        return run_junit(run, run_verdict(run))

    def export_otlp(self, run):

        return json.dumps(run_to_otlp(run), indent=1) + "\n"
