"""What the verdict reads of the runs' cases and trials, fetched once for all of them
(`Evidence`): unscored results grouped, errored trials, the case counts.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max, Q

from evaluations.choices import (
    BillingCoverage,
    CheckStatus,
    TrialStatus,
)
from evaluations.contract.runs import runs_totals, trials_in_error
from evaluations.models import CheckResult, Trial
from evaluations.reads.figures import stored_checks, unscored_of
from evaluations.verdict.fixes import unknown_effect_causes
from evaluations.verdict.sequential import finished_sequences


def unscored_groups(runs: list) -> dict[int, list[dict[str, Any]]]:
    """``{run pk: [{label, status, n, reason}]}`` of the blocking results skipped or in error:
    stored figures first, one grouped query for the runs without."""

    groups: dict[int, list[dict[str, Any]]] = {}
    live = []
    for run in runs:
        rows = stored_checks(run)
        if rows is None:
            live.append(run.pk)
        else:
            groups[run.pk] = unscored_of(rows)["groups"]
    if live:
        rows = (
            CheckResult.objects.filter(
                trial__run_id__in=live,
                blocking=True,
                status__in=[CheckStatus.SKIPPED, CheckStatus.ERROR],
            )
            .values("trial__run_id", "check_config__label", "status")
            .annotate(n=Count("pk"), reason=Max("reason"))
            .order_by("trial__run_id", "check_config__label", "status")
        )
        for row in rows:
            groups.setdefault(row["trial__run_id"], []).append(
                {
                    "label": row["check_config__label"],
                    "status": row["status"],
                    "n": row["n"],
                    "reason": row["reason"],
                }
            )
    return groups


def errored_trials(runs: list) -> dict[int, dict[str, Any]]:
    """``{run pk: {cases, missing_cost, estimated_cost, trials, error}}`` of the runs' trials in
    error: the cases with one, how many have no billed cost (missing or estimated), counted as
    the contract counts a trial's cost, how many there are and one of their errors; one grouped
    query, none without runs."""

    if not runs:
        return {}
    billed = Q(billing_coverage=BillingCoverage.BILLED, cost_usd__isnull=False)
    estimated = Q(billing_coverage=BillingCoverage.ESTIMATED)
    rows = (
        Trial.objects.filter(run_id__in=[run.pk for run in runs], status=TrialStatus.ERROR)
        .values("run_id")
        .annotate(
            cases=Count("case_id", distinct=True),
            missing_cost=Count("pk", filter=~billed & ~estimated),
            estimated_cost=Count("pk", filter=estimated),
            trials=Count("pk"),
            error=Max("error"),  # one of their errors, to name the cause
        )
        .order_by()
    )
    return {row.pop("run_id"): row for row in rows}


def cases_unscored(runs: list) -> dict[int, int]:
    """``{run pk: cases with a blocking result unscored}``: the count the run's end stored in
    its summary (`compute_case_results`: ``cases_unscored``), else (a run finished before it
    was stored) one grouped query over the check results of those runs, none without them."""

    counted = {}
    ids = []
    for run in runs:
        stored = (run.summary or {}).get("cases_unscored")
        if isinstance(stored, int):
            counted[run.pk] = stored
        else:
            ids.append(run.pk)
    if not ids:
        return {pk: n for pk, n in counted.items() if n}
    rows = CheckResult.objects.filter(
        trial__run_id__in=ids,
        blocking=True,
        status__in=[CheckStatus.SKIPPED, CheckStatus.ERROR],
    ).values("trial__run_id")
    per_run = rows.annotate(n=Count("trial__case_id", distinct=True)).order_by()
    return {pk: n for pk, n in counted.items() if n} | {
        row["trial__run_id"]: row["n"] for row in per_run
    }


def unscored_beside(unscored: int) -> str:
    return f" ({unscored} unscored case(s) not counted)" if unscored else ""


def is_all_unscored(run) -> bool:
    """A completed run with cases none of which has a verdict (every one `unscored`)."""
    summary = run.summary or {}
    cases = summary.get("cases") or 0
    return (
        bool(cases) and summary.get("unscored") == cases and summary.get("case_pass_rate") is None
    )


def is_unjudged(run) -> bool:
    """A run whose cases no check judged (imported trials): ``summary.passed`` is None."""
    summary = run.summary or {}
    return (
        bool(summary.get("cases"))
        and summary.get("passed") is None
        and summary.get("case_pass_rate") is None
    )


def case_counts(runs: list, evidence: Evidence | None) -> dict[str, int]:
    judged = [run for run in runs if not is_unjudged(run)]
    total = sum((run.summary or {}).get("cases") or 0 for run in runs)
    passed = sum((run.summary or {}).get("passed") or 0 for run in judged)
    # Cases with no verdict (state `unscored`) are neither passed nor failed.
    without_verdict = sum((run.summary or {}).get("unscored") or 0 for run in judged)
    failed = sum((run.summary or {}).get("cases") or 0 for run in judged) - passed - without_verdict
    errored = unscored = 0
    if evidence is not None:
        errored = sum(evidence.errored.get(run.pk, {}).get("cases", 0) for run in runs)
        unscored = sum(evidence.unscored_cases.get(run.pk, 0) for run in runs)
    return {
        "total": total,
        "passed": passed,
        "failed": failed,
        "without_verdict": without_verdict,
        "errored": errored,
        "unscored": unscored,
    }


class Evidence:
    """What the verdict reads of finished runs, fetched once for all of them."""

    def __init__(self, runs: list):
        self.totals = runs_totals(runs) if runs else {}
        self.errors = trials_in_error(runs) if runs else {}
        self.unscored = unscored_groups(runs)
        # The runs that stop early, their cases in seed order (none: no query).
        self.sequences = finished_sequences(runs)
        self.errored = errored_trials([r for r in runs if self.errors.get(r.pk)])
        self.unscored_cases = cases_unscored(
            [r for r in runs if sum(g["n"] for g in self.unscored.get(r.pk, []))]
        )
        # The tools behind unknown effects, for the fix of that gate: one query for all the
        # runs that have any.
        self.unknown_causes = unknown_effect_causes(
            [r for r in runs if getattr(self.totals.get(r.pk), "effects_unknown", 0)]
        )
