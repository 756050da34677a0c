"""`manage.py check_judge [--family F ...] [--max-retries N] [--json]`: probe the judge.

Asks the configured judge (`SHERLOCK_JUDGE_BASE_URL`, `SHERLOCK_JUDGE_MODEL`) one question per
rubric family (`evaluations.checks.rubrics.PROBES`), past the cache and with the caps and bounds
a run would send, and prints per family whether a valid answer came back, the latency, the
tokens and the cap, and what to change when it failed; then whether the model has a price.
The result is stored (`JudgeProbe`) as the judge's status: the admin shows it and a run's
estimate warns when its blocking model checks belong to a family that failed
(`evaluations.judge.probe`). The probe's calls are recorded and priced like any judge call.

Exit status: 0 when every family answered, 1 when any failed, 2 when no judge is configured or
the arguments are wrong. By default each question is sent once (`--max-retries 0`), so a hung
server costs one timeout per family; `--max-retries` uses more.
"""

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluations.checks import rubrics
from evaluations.costs.prices import with_free_judge
from evaluations.costs.texts import format_usd
from evaluations.judge import JudgeClient
from evaluations.judge.probe import probe_judge, store_probe
from evaluations.judge.schema import server_bounds
from evaluations.models import ModelPrice

USAGE_ERROR = 2


class Command(BaseCommand):
    help = "Ask the configured judge one question per rubric family and report what came back."

    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--family",
            action="append",
            choices=rubrics.FAMILIES,
            help="probe only this family (repeatable); default: every family",
        )
        parser.add_argument(
            "--max-retries",
            type=int,
            default=0,
            help="retries per question on 429, 5xx and timeouts (default 0: ask once)",
        )
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args, **options):

        if not settings.SHERLOCK_JUDGE_BASE_URL:
            raise CommandError(
                "no judge configured: set SHERLOCK_JUDGE_BASE_URL (and SHERLOCK_JUDGE_MODEL)",
                returncode=USAGE_ERROR,
            )
        if options["max_retries"] < 0:
            raise CommandError("--max-retries must be 0 or more", returncode=USAGE_ERROR)
        judge = JudgeClient(max_retries=options["max_retries"], cache_lookup=None, cache_size=0)
        families = options["family"] or list(rubrics.FAMILIES)
        results = probe_judge(judge, families)
        probe = store_probe(judge, results)
        price = with_free_judge(
            {p.model: p for p in ModelPrice.objects.filter(model=judge.model)}
        ).get(judge.model)

        configured = server_bounds(judge.base_url, settings.SHERLOCK_JUDGE_SCHEMA_BOUNDS)
        bounds_refused = sorted(configured - judge.bounds)
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "base_url": judge.base_url,
                        "model": judge.model,
                        "ok": probe.ok,
                        "priced": price is not None,
                        "schema_bounds_refused": bounds_refused,
                        "families": [result.as_dict() for result in results],
                    },
                    indent=2,
                )
            )
        else:
            self._report(judge, results, price, bounds_refused)
        if not probe.ok:
            raise CommandError(
                f"{len([r for r in results if not r.ok])} of {len(results)} families failed",
                returncode=1,
            )

    def _report(self, judge, results, price, bounds_refused):
        cap = judge.max_tokens or "sized per question"
        bounds = ", ".join(sorted(judge.bounds)) or "none"
        self.stdout.write(
            f"judge {judge.model} at {judge.base_url} (timeout {judge.timeout:g} s, cap {cap} "
            f"as {judge.cap_parameter}, bounds {bounds})"
        )
        for result in results:
            verdict = "ok" if result.ok else f"FAILED ({result.error_code})"
            self.stdout.write(
                f"  {result.family:<10} {result.rubric_id:<24} {verdict:<22} "
                f"{result.latency_ms:>8.0f} ms  {result.prompt_tokens:>5} in "
                f"{result.completion_tokens:>5} out  cap {result.max_tokens}"
            )
            if result.error:
                self.stdout.write(f"             {result.error}")
            if result.advice:
                self.stdout.write(f"             -> {result.advice}")
        if bounds_refused:
            self.stdout.write(
                f"the server refused {' and '.join(bounds_refused)}: set "
                "SHERLOCK_JUDGE_SCHEMA_BOUNDS=false to stop sending bounds (each process finds "
                "out with one refused call otherwise)"
            )
        if price is None:
            self.stdout.write(
                f"price: no ModelPrice for {judge.model}: its calls show as price missing; add "
                "one in the admin, or set SHERLOCK_JUDGE_FREE=true for a judge on your own "
                "server"
            )
        else:
            self.stdout.write(
                f"price: {format_usd(price.usd_per_million_input)}/M in, "
                f"{format_usd(price.usd_per_million_output)}/M out"
            )
