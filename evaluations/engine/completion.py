"""Completing a run: once every trial is finished, its case results, summary and signal.

Whichever worker finishes the last trial (or the reaper, or `CancelRun` when nothing is left
running) calls `maybe_finish_run`; a compare-and-set on `Run.finalized_at` makes exactly one
of them compute the case results and the summary (`compute_case_results`, also used by
`ImportTrials` for runs it imports) and send `run_finished` on commit.
"""

import gc
from contextlib import contextmanager
from itertools import groupby
from operator import itemgetter
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from evaluations.checks import MODEL_KINDS, scoring
from evaluations.choices import (
    RUN_STATES,
    TRIAL_FINISHED,
    CaseStatus,
    CheckStatus,
    RunStatus,
    TrialStatus,
)
from evaluations.models import CaseResult, Check, CheckResult, Run, Trial
from evaluations.reads import figures
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
            # A waiting client run whose uploads were all scored early is not finished: the
            # client's finish (or the run's expiry) queues it, then it is.
            Run.objects.filter(pk=run_id, finalized_at__isnull=True)
            .exclude(status=RunStatus.WAITING)
            .update(finalized_at=timezone.now())
            != 1
        ):
            return False
        run = Run.objects.select_for_update().get(pk=run_id)
        summary = compute_case_results(run)
        finished = {"summary": summary, "finished_at": timezone.now()}
        if RUN_STATES.may_move(run.status, RunStatus.COMPLETED):
            status = RunStatus.COMPLETED
            # The row is locked: it cannot have moved since it was read.
            RUN_STATES.move(run, status, **finished)
        else:
            status = run.status  # a cancelled run stays cancelled; only its figures are written
            Run.objects.filter(pk=run_id).update(**finished)
        transaction.on_commit(
            lambda: run_finished.send(sender=Run, run_id=run_id, status=str(status))
        )
    return True


def compute_case_results(run):
    """Write one CaseResult per case, store the run's figures
    (`evaluations.reads.figures`) and return the run summary.

    Cancelled trials never ran: they are no repetition of their case (a case whose every
    repetition was cancelled has no result), unless a check result was written for them.
    A constant number of queries whatever the number of trials: the check results are
    aggregated in the database per case and check (`figures.check_groups`), the repetitions
    per case, and Python sees one row per case and check, never one per result. And a
    constant memory whatever the number of cases: both aggregates stream ordered by case and
    are merged by case id, the case results are inserted `CHUNK` cases at a time, and the
    figures are tallied as the rows go by (`figures.Tally`).
    """
    run_id, n, passed, flaky, trials_error, trials_cancelled = run.pk, 0, 0, 0, 0, 0
    unscored, failed_cases, cases_without_verdict = 0, 0, 0
    chunk = []
    # One transaction, that of the caller if any (finishing's): the chunks go in together,
    # and PostgreSQL's server-side cursors live within it.
    with transaction.atomic(savepoint=False), _without_cycle_collection():
        CaseResult.objects.filter(run=run).delete()
        checks = _Checks(Check.objects.filter(dataset_version_id=run.dataset_version_id))
        tally = figures.Tally()
        cases = _groups_by_case(figures.check_groups(run), tally)
        pending = next(cases, None)
        for row in repetitions_by_case(run):
            case_id, repetitions, failed, errors, cancelled, *_ = row
            trials_error += errors
            trials_cancelled += cancelled
            # Both in case order: the groups of a case without repetitions are only tallied.
            while pending is not None and pending[0] < case_id:
                pending = next(cases, None)
            rows: Any = ()
            if pending is not None and pending[0] == case_id:
                rows, pending = pending[1], next(cases, None)
            if not repetitions:
                continue
            # A case with a blocking result no check could score (skipped, error): what the
            # verdict's "blocking checks scored" gate counts, kept in the summary so that no
            # page has to count it again over every check result of the run.
            unscored += any(row[2] and row[3] in figures.UNSCORED for row in rows)
            status, reason, repetitions_passed, repetitions_unscored = case_state_of(row)
            n += 1
            passed += status == CaseStatus.PASSED
            flaky += status == CaseStatus.FLAKY
            failed_cases += status == CaseStatus.FAILED
            cases_without_verdict += status == CaseStatus.UNSCORED
            chunk.append(
                {
                    "run_id": run_id,
                    "case_id": case_id,
                    "status": status,
                    "reason": reason,
                    "passed": status == CaseStatus.PASSED,
                    "flaky": status == CaseStatus.FLAKY,
                    "repetitions": repetitions,
                    "repetitions_passed": repetitions_passed,
                    "repetitions_unscored": repetitions_unscored,
                    "checks": _case_checks(rows, checks),
                }
            )
            if len(chunk) == CHUNK:
                insert_all(CaseResult, chunk)
                chunk = []
        insert_all(CaseResult, chunk)
        for _ in cases:  # tally what is left
            pass
        run.figures = figures.build(run, tally, checks, trials_error)
        Run.objects.filter(pk=run.pk).update(figures=run.figures)
    # The case pass rate counts only the cases with a verdict; the unscored stand beside it
    # (`unscored`), and the "blocking checks scored" gate decides whether they block.
    decided = n - cases_without_verdict
    return {
        "cases": n,
        "passed": passed,
        "failed": failed_cases + flaky,
        "flaky": flaky,
        "unscored": cases_without_verdict,
        "case_pass_rate": round(passed / decided, 6) if decided else None,
        "trials_error": trials_error,
        "trials_cancelled": trials_cancelled,
        "cases_unscored": unscored,
    }


# Case results inserted at a time (one COPY each on PostgreSQL).
CHUNK = 2000


@contextmanager
def _without_cycle_collection():
    """Python's cyclic garbage collector paused meanwhile (if it ran): finishing makes
    hundreds of thousands of short-lived dicts and tuples, none in a cycle, and the ones a
    chunk keeps alive for a while set off full collections of the worker's whole heap, about
    0.1 s of a 1 s finish of 100,000 trials (`bench/contract_100k.py`). Reference counting
    still frees everything; what cycles other threads make meanwhile wait for the next
    collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Checks(dict):
    """Check id -> Check: those of the run's dataset version, read at once, and any other a
    check result names, read when first met."""

    def __init__(self, checks):
        super().__init__((check.pk, check) for check in checks)

    def __missing__(self, pk):
        check = self[pk] = Check.objects.get(pk=pk)
        return check


def _groups_by_case(groups, tally):
    """(case id, its rows) per case of the `check_groups` rows (ordered by case), each row
    added to ``tally`` on the way."""
    case_id = None
    rows: list[Any] = []
    for row in groups:
        tally.add(row)
        if row[0] != case_id:
            if rows:
                yield case_id, rows
            case_id, rows = row[0], []
        rows.append(row)
    if rows:
        yield case_id, rows


def case_state_of(row) -> tuple[str, str, int, int]:
    """(status, reason, repetitions passed, repetitions unscored) of a case from its
    `repetitions_by_case` row (`scoring.case_state`)."""
    _, repetitions, failed, _, _, *why = row
    unscored = sum(why)
    passed = repetitions - failed - unscored
    reasons = [r for r, count in zip(scoring.UNSCORED_REASONS, why, strict=True) if count]
    status, reason = scoring.case_state(repetitions, passed, failed, reasons)
    return status, reason, passed, unscored


def repetitions_by_case(run, case_ids=None):
    """Per case of the run, in case order: (case id, its repetitions (trials not cancelled,
    or with a check result), those that failed (a blocking check failed), its trials in
    error, its trials cancelled, then its unscored repetitions by reason, in the order of
    `scoring.UNSCORED_REASONS`): `scoring.repetition_state` counted in the database. One
    query, streamed. Each trial's blocking results are probed with correlated EXISTS (an index
    look-up by trial; the failed ones from the partial index of blocking failures): as `IN`
    subqueries inside the aggregates' filters PostgreSQL ran them again for every trial,
    unhashed, so finishing a run of 100,000 trials took minutes (bench/stop_early_monitor.py).
    `case_ids`: only those cases."""
    blocking = CheckResult.objects.filter(trial=OuterRef("pk"), blocking=True)
    failing = Exists(blocking.filter(status=CheckStatus.FAILED))
    judge_down = Exists(
        blocking.filter(
            Q(status=CheckStatus.ERROR, check_config__kind__in=MODEL_KINDS)
            | Q(status=CheckStatus.SKIPPED, reason=scoring.NO_JUDGE_SKIP)
        )
    )
    check_error = Exists(blocking.filter(status=CheckStatus.ERROR))
    scored = Exists(blocking.filter(status__in=(CheckStatus.PASSED, CheckStatus.SCORED)))
    has_results = Exists(CheckResult.objects.filter(trial=OuterRef("pk")))
    counted = ~Q(status=TrialStatus.CANCELLED) | has_results
    undecided = counted & ~failing
    agent_ran = undecided & ~Q(status=TrialStatus.ERROR)
    trials = Trial.objects.filter(run=run)
    if case_ids is not None:
        trials = trials.filter(case_id__in=case_ids)
    return (
        trials.values_list("case_id")
        .annotate(
            repetitions=Count("pk", filter=counted),
            failed=Count("pk", filter=failing),
            errors=Count("pk", filter=Q(status=TrialStatus.ERROR)),
            cancelled=Count("pk", filter=Q(status=TrialStatus.CANCELLED)),
            agent_error=Count("pk", filter=undecided & Q(status=TrialStatus.ERROR)),
            judge=Count("pk", filter=agent_ran & judge_down),
            check_error=Count("pk", filter=agent_ran & ~judge_down & check_error),
            nothing_scored=Count("pk", filter=agent_ran & ~judge_down & ~check_error & ~scored),
        )
        .order_by("case_id")
        .iterator(chunk_size=figures.CHUNK)
    )


def _case_checks(rows, checks):
    """A case's per-check summary (`scoring.check_summary`) from its `check_groups` rows
    (ordered by check), in the dataset's order (position, label). A check is blocking as it
    was in the case's first repetition."""
    summaries = []
    for pk, grouped in groupby(rows, itemgetter(1)):
        group = list(grouped)
        if len(group) == 1:  # one status in every repetition: most checks of most cases
            _, _, blocking, status, _, results, scores, score_sum, _, _ = group[0]
            statuses, score_sum = {status: results}, score_sum or 0.0
        else:
            counts: dict[str, int] = {}
            score_sum, scores, first = 0.0, 0, None
            for _, _, row_blocking, status, repetition, results, n, row_sum, _, _ in group:
                counts[status] = counts.get(status, 0) + results
                score_sum += row_sum or 0.0
                scores += n
                if first is None or repetition < first:
                    first, blocking = repetition, row_blocking
            statuses = {s: counts[s] for s in figures.STATUSES if s in counts}
        check = checks[pk]
        summaries.append(
            (
                (check.position, check.label),
                scoring.check_summary(statuses, score_sum, scores, blocking),
            )
        )
    summaries.sort(key=itemgetter(0))
    return {label: summary for (_, label), summary in summaries}
