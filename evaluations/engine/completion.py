"""Completing a run: once every trial is finished, its case results, summary and signal.

Whichever worker finishes the last trial (or the reaper, or `CancelRun` when nothing is left
running) calls `maybe_finish_run`; a compare-and-set on `Run.finalized_at` makes exactly one
of them compute the case results and the summary (`compute_case_results`, also used by
`ImportTrials` for runs it imports) and send `run_finished` on commit.
"""

from django.db import transaction
from django.utils import timezone

from evaluations import scoring
from evaluations.choices import TRIAL_FINISHED, RunStatus, TrialStatus
from evaluations.models import CaseResult, CheckResult, Run, Trial
from evaluations.signals import run_finished


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
    """Write one CaseResult per case (DESIGN section 5) and return the run summary.

    Cancelled trials never ran: they are no repetition of their case (a case whose every
    repetition was cancelled has no result).
    """
    rows = CheckResult.objects.filter(trial__run=run).values_list(
        "trial__case_id",
        "trial__repetition",
        "check_config__label",
        "score",
        "status",
        "blocking",
    )
    by_case = {}
    for case_id, repetition, label, score, status, blocking in rows.iterator(chunk_size=5000):
        reps = by_case.setdefault(case_id, {})
        reps.setdefault(repetition, []).append(
            {"label": label, "score": score, "status": status, "blocking": blocking}
        )
    # Trials whose checks produced no rows (no checks at all) still count as repetitions.
    executed = Trial.objects.filter(run=run).exclude(status=TrialStatus.CANCELLED)
    for case_id, repetition in executed.values_list("case_id", "repetition"):
        by_case.setdefault(case_id, {}).setdefault(repetition, [])
    case_results = []
    for case_id, reps in by_case.items():
        summary = scoring.summarize_case([reps[k] for k in sorted(reps)])
        case_results.append(
            CaseResult(
                run=run,
                case_id=case_id,
                passed=summary.passed,
                flaky=summary.flaky,
                repetitions=summary.repetitions,
                repetitions_passed=summary.repetitions_passed,
                checks=summary.checks,
            )
        )
    CaseResult.objects.filter(run=run).delete()
    CaseResult.objects.bulk_create(case_results)
    n = len(case_results)
    passed = sum(c.passed for c in case_results)
    return {
        "cases": n,
        "passed": passed,
        "failed": n - passed,
        "flaky": sum(c.flaky for c in case_results),
        "case_pass_rate": round(passed / n, 6) if n else None,
        "trials_error": Trial.objects.filter(run=run, status=TrialStatus.ERROR).count(),
        "trials_cancelled": Trial.objects.filter(run=run, status=TrialStatus.CANCELLED).count(),
    }
