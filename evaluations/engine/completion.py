"""Completing a run: once every trial is finished, its case results, summary and signal.

Whichever worker finishes the last trial (or the reaper, or `CancelRun` when nothing is left
running) calls `maybe_finish_run`; a compare-and-set on `Run.finalized_at` makes exactly one
of them compute the case results and the summary (`compute_case_results`, also used by
`ImportTrials` for runs it imports) and send `run_finished` on commit.
"""

from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from evaluations import figures, scoring
from evaluations.choices import TRIAL_FINISHED, CheckStatus, RunStatus, TrialStatus
from evaluations.models import CaseResult, Check, CheckResult, Run, Trial
from evaluations.signals import run_finished
from sherlock.core.bulk import insert_all


def maybe_finish_run(run_id):
    """Finish the run if every trial is finished; exactly once, whoever calls it."""
    unfinished = Trial.objects.filter(run_id=run_id).exclude(status__in=TRIAL_FINISHED)
    if unfinished.exists():
        return False
    with transaction.atomic():
        # The compare-and-set that makes finishing happen once, even with concurrent workers.
        if (
            Run.objects.filter(pk=run_id, finalized_at__isnull=True).update(
                finalized_at=timezone.now()
            )
            != 1
        ):
            return False
        run = Run.objects.select_for_update().get(pk=run_id)
        summary = compute_case_results(run)
        status = RunStatus.CANCELLED if run.status == RunStatus.CANCELLED else RunStatus.COMPLETED
        Run.objects.filter(pk=run_id).update(
            status=status, summary=summary, finished_at=timezone.now()
        )
        transaction.on_commit(
            lambda: run_finished.send(sender=Run, run_id=run_id, status=str(status))
        )
    return True


def compute_case_results(run):
    """Write one CaseResult per case (DESIGN section 5), store the run's figures
    (`evaluations.figures`) and return the run summary.

    Cancelled trials never ran: they are no repetition of their case (a case whose every
    repetition was cancelled has no result), unless a check result was written for them.
    A constant number of queries whatever the number of trials: the check results are
    aggregated in the database per case and check (`figures.check_groups`), the repetitions
    per case, and Python sees one row per case and check, never one per result.
    """
    groups = figures.check_groups(run)
    checks = Check.objects.in_bulk({row["check_config_id"] for row in groups})
    # Each check's label and place in the dataset's order, looked up once per case.
    order = {pk: (check.position, check.label) for pk, check in checks.items()}
    per_case = {}
    for row in groups:
        per_case.setdefault(row["case_id"], []).append(row)
    case_results, trials_error, trials_cancelled = [], 0, 0
    for row in _repetitions(run):
        trials_error += row["errors"]
        trials_cancelled += row["cancelled"]
        if not row["repetitions"]:
            continue
        passed, flaky = scoring.case_verdict(row["repetitions"], row["repetitions_passed"])
        case_results.append(
            {
                "run_id": run.pk,
                "case_id": row["case_id"],
                "passed": passed,
                "flaky": flaky,
                "repetitions": row["repetitions"],
                "repetitions_passed": row["repetitions_passed"],
                "checks": _case_checks(per_case.get(row["case_id"], []), order),
            }
        )
    CaseResult.objects.filter(run=run).delete()
    insert_all(CaseResult, case_results)
    run.figures = figures.build(run, groups, checks, trials_error)
    Run.objects.filter(pk=run.pk).update(figures=run.figures)
    n = len(case_results)
    passed = sum(c["passed"] for c in case_results)
    return {
        "cases": n,
        "passed": passed,
        "failed": n - passed,
        "flaky": sum(c["flaky"] for c in case_results),
        "case_pass_rate": round(passed / n, 6) if n else None,
        "trials_error": trials_error,
        "trials_cancelled": trials_cancelled,
    }


def _repetitions(run):
    """Per case of the run: its repetitions (trials not cancelled, or with a check result),
    those that passed (no blocking check failed: `scoring.repetition_passed`), and its trials
    in error and cancelled. One query; the failed repetitions come from the partial index of
    blocking failures."""
    failing = CheckResult.objects.filter(
        trial__run=run, blocking=True, status=CheckStatus.FAILED
    ).values("trial_id")
    has_results = Exists(CheckResult.objects.filter(trial=OuterRef("pk")))
    counted = ~Q(status=TrialStatus.CANCELLED) | has_results
    rows = (
        Trial.objects.filter(run=run)
        .values("case_id")
        .annotate(
            repetitions=Count("pk", filter=counted),
            failed=Count("pk", filter=Q(pk__in=failing)),
            errors=Count("pk", filter=Q(status=TrialStatus.ERROR)),
            cancelled=Count("pk", filter=Q(status=TrialStatus.CANCELLED)),
        )
        .order_by()
    )
    for row in rows:
        row["repetitions_passed"] = row["repetitions"] - row["failed"]
        yield row


def _case_checks(rows, order):
    """A case's per-check summary (`scoring.check_summary`) from its `check_groups` rows, in
    the dataset's order (``order``: check id -> (position, label)). A check is blocking as it
    was in the case's first repetition."""
    by_check = {}
    for row in rows:
        by_check.setdefault(row["check_config_id"], []).append(row)
    summary = {}
    for pk in sorted(by_check, key=order.__getitem__):
        counts, score_sum, scores, first = {}, 0.0, 0, None
        for row in by_check[pk]:
            counts[row["status"]] = counts.get(row["status"], 0) + row["results"]
            score_sum += row["score_sum"] or 0.0
            scores += row["scores"]
            if first is None or row["first_repetition"] < first["first_repetition"]:
                first = row
        statuses = {status: counts[status] for status in figures.STATUSES if status in counts}
        summary[order[pk][1]] = scoring.check_summary(
            statuses, score_sum, scores, first["blocking"]
        )
    return summary
