"""`manage.py evaluate AGENT --dataset SLUG`: start a run, wait for it, print its results.

    manage.py evaluate AGENT [--version N] --dataset SLUG [--dataset-version N]
        [--repetitions K] [--stop-early [--seed N]] [--wait S] [--junit FILE] [--json FILE]
        [--user U] [--summary]

The run is started as `--user` (default `SHERLOCK_USER`) through `StartRun`, so its rights are
`POST /api/v1/runs/`'s: a Builder (or Admin) of the agent who sees the dataset. `--version`
defaults to the live version, else the newest; `--dataset-version` to the newest frozen one.
While it waits, a progress bar on a terminal, a plain line otherwise (CI); then the case table,
the spend, the contract table and the verdict every surface gives (`run_verdict`, under the
policy in force), with its gates, reasons and missing evidence. `--stop-early` runs the cases
in a seeded order and stops once the gates are decided (docs/contract.md, "Stopping early").
`--junit` and `--json` write
the run's JUnit XML and a JSON summary; `--summary` asks the judge for the run's summary.

Exit status, the verdict's: 0 passed, 1 failed, 2 incomplete; 2 also on an error (bad usage,
an unknown name, a refused start) or when the run did not finish within `--wait` seconds (it
goes on). The publish decision itself is `manage.py gate`'s. docs/guide.md, "A tour".
"""

import json
import os
import time
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.urls import reverse

from agents.choices import Adapter
from agents.models import Agent
from evaluations.actions.start_run import StartRun
from evaluations.actions.summarize_run import SummarizeRun
from evaluations.choices import RUN_TERMINAL, RunStatus
from evaluations.contract import render_table
from evaluations.costs.texts import describe_estimate, describe_spend, format_usd
from evaluations.models import CaseResult, Run, case_counts_words
from evaluations.reads.junit import run_junit
from evaluations.reads.run_rights import runnable_datasets
from evaluations.verdict import run_verdict
from evaluations.verdict.sequential import stopped_words
from sherlock.core.commands import ERROR, VerdictCommand
from sherlock.core.errors import ActionError

USER_ENV = "SHERLOCK_USER"


class Command(VerdictCommand):
    help = (
        "Start a run of an agent version on a dataset version as --user (or $SHERLOCK_USER), "
        "wait for it, print the case table, the five-metric contract and the verdict. Exit 0 "
        "passed, 1 failed, 2 incomplete, on an error or a timeout."
    )

    def add_arguments(self, parser):
        # `--version N` is the agent's version; Django's own `--version` gives way (as in gate).
        parser._optionals.conflict_handler = "resolve"
        parser.add_argument("agent_slug")
        parser.add_argument(
            "--version", type=int, help="agent version number (default: live, else newest)"
        )
        parser.add_argument("--dataset", required=True, help="the dataset's slug")
        parser.add_argument(
            "--dataset-version", type=int, help="dataset version number (default: newest frozen)"
        )
        parser.add_argument("--repetitions", type=int, default=1, help="runs of each case (1)")
        parser.add_argument(
            "--stop-early",
            action="store_true",
            help="run the cases in a seeded random order and stop once every gate is decided",
        )
        parser.add_argument("--seed", type=int, help="the order's seed (default: a random one)")
        parser.add_argument(
            "--wait", type=float, default=600, help="seconds to wait for the run (600)"
        )
        parser.add_argument("--junit", help="write a JUnit XML report to this file")
        parser.add_argument("--json", dest="json_file", help="write a JSON summary to this file")
        parser.add_argument(
            "--user", help=f"start the run as this user, a Builder (default: ${USER_ENV})"
        )
        parser.add_argument("--poll", type=float, default=1.0, help="seconds between checks (1)")
        parser.add_argument(
            "--summary",
            action="store_true",
            help="ask the judge for the run's summary and print it (judge calls, kind summary)",
        )

    def print_verdict(self, verdict):
        """The contract's table, the gates, what is missing, the result and how to fix it."""
        if verdict.contract is not None:
            self.stdout.write(f"contract ({verdict.applied.source}):")
            self.stdout.write(render_table([verdict.contract], [verdict], units=True))
        for gate in verdict.gates:
            self.stdout.write(f"  {gate.label:<24} {gate.state:<4}  {gate.detail}")
        for item in verdict.missing:
            required = " (required by the policy)" if item.fails else ""
            self.stdout.write(f"missing: {item.detail}{required}; to add it: {item.fix}")
        self.stdout.write(f"result: {self.why(verdict)}")
        for reason in verdict.reasons:
            if reason.fix:
                self.stdout.write(f"  to fix {reason.code}: {reason.fix} (docs: {reason.docs})")

    def handle(self, *args, agent_slug, dataset, **options):
        user = self.acting_user(options["user"])
        agent_version = self.agent_version(user, agent_slug, options["version"])
        dataset_version = self.dataset_version(
            user, agent_version.agent, dataset, options["dataset_version"]
        )
        if agent_version.adapter == Adapter.CLIENT:
            # Its run would wait for uploads this command never sends (docs/client.md).
            raise CommandError(
                f"{agent_version} runs on the client, not here: run it with `sherlock run`",
                returncode=ERROR,
            )
        try:
            run = StartRun(
                acting_user=user,
                agent_version=agent_version,
                dataset_version=dataset_version,
                repetitions=options["repetitions"],
                stop_early=options["stop_early"],
                seed=options["seed"],
            ).execute()
        except ActionError as exc:
            raise CommandError(f"run refused: {exc}", returncode=ERROR) from None
        self.stdout.write(
            f"run #{run.pk}: {agent_version} on {dataset_version}, {run.repetitions} "
            f"repetition(s), {run.trials_total} trials; estimate "
            f"{describe_estimate(run.estimate)}"
            + (f"; stops early, cases in the order of seed {run.seed}" if run.stop_early else "")
        )
        run = self.wait_for(run, options["wait"], options["poll"])
        if run.status != RunStatus.COMPLETED:
            raise CommandError(
                f"run #{run.pk} {run.status}, no verdict: {run.error or 'no error recorded'}",
                returncode=ERROR,
            )
        cases = list(
            CaseResult.objects.filter(run=run).select_related("case").order_by("case__key")
        )
        verdict = run_verdict(run)
        self.print_cases(run, cases)
        self.stdout.write(f"spend: {describe_spend(run)}")
        self.print_verdict(verdict)
        if options["summary"]:
            self.print_summary(user, run)
        if options["junit"]:
            self.write_file(options["junit"], run_junit(run, verdict), "JUnit XML")
        if options["json_file"]:
            summary = self.summary(run, cases, verdict)
            self.write_file(options["json_file"], json.dumps(summary, indent=2) + "\n", "JSON")
        if verdict.exit_code:
            raise SystemExit(verdict.exit_code)

    def print_summary(self, user, run):
        try:
            run = SummarizeRun(acting_user=user, run=run).execute()
        except ActionError as exc:
            self.stdout.write(f"summary: unavailable: {exc}")
            return
        self.stdout.write("summary (the judge's; every statement cites cases of this run):")
        for statement in run.judge_summary["statements"]:
            cases = ", ".join(statement["cases"])
            self.stdout.write(f"  [{statement['kind']}] {statement['text']} ({cases})")

    # --- what to run ---------------------------------------------------------------------

    def acting_user(self, username):
        username = username or os.environ.get(USER_ENV)
        if not username:
            raise CommandError(
                f"usage: pass --user USERNAME (a Builder of the agent) or set ${USER_ENV}",
                returncode=ERROR,
            )
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"no active user named {username!r}", returncode=ERROR)
        return user

    def agent_version(self, user, slug, number):
        agent = Agent.objects.for_user(user).filter(slug=slug).first()
        if agent is None:
            raise CommandError(f"no agent {slug!r} (that {user} may see)", returncode=ERROR)
        versions = agent.versions.order_by("-number")
        if number is not None:
            found = versions.filter(number=number).first()
        else:
            found = agent.live_version or versions.first()
        if found is None:
            which = f"version {number}" if number is not None else "version"
            raise CommandError(f"{slug} has no {which}", returncode=ERROR)
        return found

    def dataset_version(self, user, agent, slug, number):
        """The version of the dataset `slug` to run `agent` on: one `user` may see, or one the
        agent is gated on when `user` builds it (`evaluations.reads.run_rights`)."""
        dataset = runnable_datasets(user, agent).filter(slug=slug).first()
        if dataset is None:
            raise CommandError(
                f"no dataset {slug!r} (that {user} may see or run {agent.slug} on)",
                returncode=ERROR,
            )
        versions = dataset.versions.select_related("dataset").order_by("-number")
        if number is not None:
            found = versions.filter(number=number).first()
        else:
            found = versions.filter(frozen_at__isnull=False).first()
        if found is None:
            which = f"version {number}" if number is not None else "frozen version"
            raise CommandError(f"dataset {slug} has no {which}", returncode=ERROR)
        return found

    # --- waiting ---------------------------------------------------------------------------

    def wait_for(self, run, wait, poll):
        deadline = time.monotonic() + max(wait, 0)
        if self.stdout.isatty():
            # Imported here: rich draws the progress bar of a terminal only: not loaded for `--json`
            # or a CI log.
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            console = Console(file=self.stdout._out)  # type: ignore[arg-type]  # a text stream
            columns: list[Any] = [
                "{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
            ]
            with Progress(*columns, console=console, transient=True) as bar:
                task = bar.add_task(f"run #{run.pk}", total=run.trials_total)
                return self._poll(
                    run, deadline, wait, poll, lambda r: bar.update(task, completed=r.trials_done)
                )
        seen: list[Any] = [None]

        def line(r):
            now = (r.status, r.trials_done, r.trials_error)
            if now != seen[0]:
                seen[0] = now
                errors = f", {r.trials_error} errors" if r.trials_error else ""
                self.stdout.write(
                    f"run #{r.pk} {r.status}: {r.trials_done}/{r.trials_total} trials{errors}"
                )

        return self._poll(run, deadline, wait, poll, line)

    def _poll(self, run, deadline, wait, poll, show):
        while True:
            run = Run.objects.select_related(
                "agent_version__agent", "dataset_version__dataset"
            ).get(pk=run.pk)
            show(run)
            if run.status in RUN_TERMINAL:
                return run
            if time.monotonic() >= deadline:
                raise CommandError(
                    f"timed out after {wait:g}s: run #{run.pk} is {run.status}, "
                    f"{run.trials_done}/{run.trials_total} trials done (it goes on)",
                    returncode=ERROR,
                )
            time.sleep(max(0.05, min(poll, deadline - time.monotonic())))

    # --- the report ------------------------------------------------------------------------

    def print_cases(self, run, cases):
        labels = list(
            run.dataset_version.checks.order_by("position", "label").values_list("label", flat=True)
        )
        rows = [["case", "result", *labels]]
        for case in cases:
            result = case.state_words
            rows.append([case.case.key, result, *(_cell(case.checks.get(x)) for x in labels)])
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            self.stdout.write(
                "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            )
        self.stdout.write(case_counts_words(run.summary))
        if run.sequential:
            self.stdout.write(stopped_words(run))

    def why(self, verdict):
        if verdict.passed:
            return "passed"
        return f"{verdict.words}: " + "; ".join(verdict.short or ["no case results"])

    def summary(self, run, cases, verdict):
        return {
            "run": run.pk,
            "agent": run.agent_version.agent.slug,
            "agent_version": run.agent_version.number,
            "dataset": run.dataset_version.dataset.slug,
            "dataset_version": run.dataset_version.number,
            "repetitions": run.repetitions,
            "status": run.status,
            "passed": verdict.passed,
            "outcome": verdict.outcome,
            "exit_code": verdict.exit_code,
            # A command knows no host: the run page's path, never an empty URL.
            "verdict": verdict.as_dict(
                run=run.pk, url=reverse("evaluations:run-detail", args=[run.pk])
            ),
            "cases": [
                {
                    "case": case.case.key,
                    "status": case.status,
                    "reason": case.reason,
                    "passed": case.passed,
                    "flaky": case.flaky,
                    "repetitions_passed": case.repetitions_passed,
                    "repetitions": case.repetitions,
                    "checks": case.checks,
                }
                for case in cases
            ],
            "contract": {
                **verdict.contract.as_dict(),
                "thresholds": verdict.applied.as_dict(),
            },
            "spend": {
                "usd": None if run.unpriced_calls else str(run.spend_usd),
                "usd_known": str(run.spend_usd),
                "price_missing_calls": run.unpriced_calls,
                "text": format_usd(run.spend_usd, run.unpriced_calls),
            },
            "estimate": run.estimate,
        }

    def write_file(self, path, text, what):
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(
                f"cannot write {path}: {exc.strerror or exc}", returncode=ERROR
            ) from None
        self.stdout.write(f"wrote {what} to {path}")


def _cell(summary):
    """A check's cell in the case table: its status, the mean score, flaky marked."""
    if summary is None:
        return "-"
    text = summary.get("status") or "?"
    if summary.get("mean") is not None:
        text += f" {summary['mean']:.2f}"
    if summary.get("flaky"):
        text += " (flaky)"
    if not summary.get("blocking", True):
        text += " (info)"
    return text
