"""The run engine: execute trials, score their checks, finish the run exactly once.

A shard (one django-q2 task) takes trial ids, claims each trial by compare-and-set with a lease,
calls the agent, scores every check, and writes the trial with its check results in one
transaction, guarded by the claim's attempt number so that a worker whose lease was taken over
cannot write a second set of results. Agent and judge calls are I/O: a shard runs its trials in
a thread pool of `SHERLOCK_RUN_CONCURRENCY`. The worker that finishes the last trial computes
the case results and the summary, guarded by a compare-and-set on `Run.finalized_at`, and sends
`run_finished` on commit.
"""

import logging
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from agents.adapters import AgentCallError, call_agent
from evaluations import checks as check_library
from evaluations import scoring
from evaluations.choices import (
    RUN_TERMINAL,
    BillingCoverage,
    CheckStatus,
    RunStatus,
    TrialStatus,
)
from evaluations.models import CaseResult, CheckResult, Run, Trial
from evaluations.signals import run_finished

log = logging.getLogger("sherlock.engine")

WORKER_NAME = f"{socket.gethostname()}:{os.getpid()}"


class LeaseLost(Exception):
    """Another worker took this trial over (our lease ran out); our results are discarded."""


def _judge_for(run, trial):
    try:
        from evaluations.judge import get_default_judge
    except ImportError:
        return None
    return get_default_judge(run=run, trial=trial)


def claim_trial(trial_id, run_id):
    """Compare-and-set a trial to `running` with a fresh lease. Returns the attempt number, or
    None when the trial is finished, held by a live lease, or its run is over."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.SHERLOCK_TRIAL_LEASE_SECONDS)
    claimable = Q(status=TrialStatus.PENDING) | Q(
        status=TrialStatus.RUNNING, lease_expires_at__lt=now
    )
    with transaction.atomic():
        current = (
            Trial.objects.filter(pk=trial_id, run_id=run_id)
            .filter(claimable)
            .exclude(run__status__in=RUN_TERMINAL)
            .values_list("attempts", flat=True)
            .first()
        )
        if current is None:
            return None
        updated = (
            Trial.objects.filter(pk=trial_id, attempts=current)
            .filter(claimable)
            .update(
                status=TrialStatus.RUNNING,
                lease_expires_at=lease,
                attempts=current + 1,
                worker=WORKER_NAME,
                started_at=now,
            )
        )
    if updated != 1:
        return None
    Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(
        status=RunStatus.RUNNING, started_at=now
    )
    return current + 1


def score_trial(trial, transcript, checks, judge):
    """Score every check of the run on one trial; returns unsaved CheckResult objects."""
    case_input = trial.case_version.as_check_input()
    overrides = trial.case_version.overrides
    results = []
    for check in checks:
        eff = scoring.effective_check(check, overrides)
        if eff.disabled:
            score, outcome, reason, evidence, calls = (
                None,
                CheckStatus.SKIPPED,
                "disabled for this case by an override",
                {},
                [],
            )
        elif transcript is None:
            score, outcome, reason, evidence, calls = (
                None,
                CheckStatus.ERROR,
                f"the agent call failed: {trial.error}",
                {},
                [],
            )
        else:
            try:
                verdict = check_library.evaluate(
                    eff.kind, eff.params, case_input, transcript, judge=judge
                )
                score, outcome = verdict.score, verdict.outcome
                reason, evidence, calls = verdict.reason, verdict.evidence, verdict.judge_calls
            except Exception as exc:  # a check's bug must not sink the trial: it is an error
                log.exception("check %s failed on trial %s", eff.label, trial.pk)
                score, outcome, reason, evidence, calls = (
                    None,
                    CheckStatus.ERROR,
                    f"{type(exc).__name__}: {exc}",
                    {},
                    [],
                )
        status = scoring.check_status(score, outcome, eff.threshold)
        results.append(
            CheckResult(
                trial=trial,
                check_config=check,
                score=score if status != CheckStatus.ERROR else None,
                status=status,
                blocking=eff.blocking,
                threshold=eff.threshold,
                reason=reason or "",
                evidence=evidence or {},
                judge_call_ids=[getattr(c, "pk", c) for c in calls or [] if c is not None],
            )
        )
    return results


def execute_trial(trial_id, run_id, checks):
    """Claim, run and score one trial, then write it with its check results atomically."""
    attempt = claim_trial(trial_id, run_id)
    if attempt is None:
        return False
    trial = Trial.objects.select_related("run__agent_version", "case_version__case").get(
        pk=trial_id
    )
    judge = _judge_for(trial.run, trial)
    transcript = None
    try:
        transcript = call_agent(trial.run.agent_version, trial.case_version.as_check_input())
    except AgentCallError as exc:
        trial.error = str(exc)
    results = score_trial(trial, transcript, checks, judge)
    cost = _trial_cost(transcript)
    with transaction.atomic():
        fields = {
            "status": TrialStatus.COMPLETED if transcript is not None else TrialStatus.ERROR,
            "finished_at": timezone.now(),
            "lease_expires_at": None,
            "error": trial.error,
        }
        if transcript is not None:
            usage = transcript.get("usage") or {}
            fields.update(
                transcript=transcript,
                latency_ms=transcript.get("latency_ms"),
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                cost_usd=cost,
                billing_coverage=(
                    BillingCoverage.BILLED if cost is not None else BillingCoverage.MISSING
                ),
                declared_complete=transcript.get("declared_complete"),
            )
        # Guarded by the attempt number: if our lease ran out and another worker re-claimed
        # the trial, this matches no row and nothing of ours is written.
        if (
            Trial.objects.filter(pk=trial_id, status=TrialStatus.RUNNING, attempts=attempt).update(
                **fields
            )
            != 1
        ):
            raise LeaseLost(trial_id)
        CheckResult.objects.bulk_create(results)
        Run.objects.filter(pk=run_id).update(
            trials_done=F("trials_done") + 1,
            trials_error=F("trials_error") + (0 if transcript is not None else 1),
            spend_usd=F("spend_usd") + (cost or Decimal(0)),
        )
    return True


def _trial_cost(transcript):
    if not transcript or transcript.get("cost_usd") is None:
        return None
    return Decimal(str(transcript["cost_usd"]))


def _run_one(trial_id, run_id, checks):
    try:
        return execute_trial(trial_id, run_id, checks)
    except LeaseLost:
        log.warning("trial %s was taken over by another worker", trial_id)
        return False
    finally:
        if not connection.in_atomic_block:
            close_old_connections()


def run_shard(run_id, trial_ids):
    """Execute one shard's trials with bounded concurrency, then try to finish the run."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None or run.status in RUN_TERMINAL:
        return 0
    checks = list(run.dataset_version.checks.order_by("position", "label"))
    pending = list(
        Trial.objects.filter(pk__in=trial_ids, run_id=run_id)
        .exclude(status__in=[TrialStatus.COMPLETED, TrialStatus.ERROR, TrialStatus.CANCELLED])
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    workers = min(settings.SHERLOCK_RUN_CONCURRENCY, len(pending))
    # Inside a transaction (the tests' sync mode) other threads could not see our rows: run
    # serially in this thread then.
    if workers <= 1 or connection.in_atomic_block:
        done = sum(bool(execute_trial_safely(pk, run_id, checks)) for pk in pending)
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="trial") as pool:
            done = sum(bool(r) for r in pool.map(lambda pk: _run_one(pk, run_id, checks), pending))
    maybe_finish_run(run_id)
    return done


def execute_trial_safely(trial_id, run_id, checks):
    try:
        return execute_trial(trial_id, run_id, checks)
    except LeaseLost:
        return False


def maybe_finish_run(run_id):
    """Finish the run if every trial is finished; exactly once, whoever calls it."""
    unfinished = Trial.objects.filter(run_id=run_id).exclude(
        status__in=[TrialStatus.COMPLETED, TrialStatus.ERROR, TrialStatus.CANCELLED]
    )
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
        status = run.status if run.status == RunStatus.CANCELLED else RunStatus.COMPLETED
        Run.objects.filter(pk=run_id).update(
            status=status, summary=summary, finished_at=timezone.now()
        )
        transaction.on_commit(
            lambda: run_finished.send(sender=Run, run_id=run_id, status=str(status))
        )
    return True


def compute_case_results(run):
    """Write one CaseResult per case (DESIGN section 5) and return the run summary."""
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
    for case_id, repetition in Trial.objects.filter(run=run).values_list("case_id", "repetition"):
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
    }


def reap_expired_leases():
    """Hand trials whose lease ran out (their worker died) back to the queue, once each."""
    from evaluations.actions.start_run import enqueue_run

    now = timezone.now()
    stale = list(
        Trial.objects.filter(status=TrialStatus.RUNNING, lease_expires_at__lt=now)
        .exclude(run__status__in=RUN_TERMINAL)
        .values_list("pk", "run_id", "attempts")
    )
    runs = set()
    for pk, run_id, attempts in stale:
        # Compare-and-set on the attempt: a worker that just finished or re-claimed it wins.
        if Trial.objects.filter(
            pk=pk, status=TrialStatus.RUNNING, attempts=attempts, lease_expires_at__lt=now
        ).update(status=TrialStatus.PENDING, lease_expires_at=None):
            runs.add(run_id)
    for run_id in runs:
        enqueue_run(run_id)
    return len(stale)
