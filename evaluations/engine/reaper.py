"""The reaper: hand back what dead workers left behind.

It runs every minute on the `sherlock-reaper` django-q2 schedule (the task
`evaluations.tasks.reap_expired_leases`, created by migration 0004) and whenever a worker
process starts (`reap_on_worker_start`, connected to django-q2's `post_spawn` in
`evaluations.apps`). What it does, and why each step is safe to race, is in `reap`.
"""

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, F, Max, OuterRef, Q
from django.utils import timezone

from evaluations.choices import RUN_TERMINAL, TRIAL_FINISHED, RunStatus, TrialStatus
from evaluations.engine.client import expire_client_runs
from evaluations.engine.completion import maybe_finish_run
from evaluations.engine.enqueue import enqueue_run
from evaluations.models import Run, Trial

log = logging.getLogger("sherlock.engine")

ACTIVE = [RunStatus.QUEUED, RunStatus.RUNNING]

MAX_ATTEMPTS = 3


def reap(now=None):  # noqa: C901
    """Hand back what dead workers left behind; safe to run anywhere, any number of times:
    a `running` trial whose lease ran out goes back to `pending` (or `cancelled`, or `error`
    after `MAX_ATTEMPTS`), an active run with no sign of life for a lease period has its
    pending trials enqueued again, a run whose trials all finished is finished, and a client
    run that waited past `SHERLOCK_CLIENT_RUN_TIMEOUT_HOURS` is released for scoring. Each
    step is a compare-and-set, so two reapers never do one twice (docs/scale-out.md, "When a
    worker dies").
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.SHERLOCK_TRIAL_LEASE_SECONDS)
    report = {"handed_back": 0, "cancelled": 0, "given_up": 0, "runs_requeued": 0, "finished": 0}
    report["client_runs_expired"] = expire_client_runs(now)

    handed_back: dict[Any, Any] = {}
    expired = Trial.objects.filter(status=TrialStatus.RUNNING, lease_expires_at__lt=now)
    for pk, run_id, attempts, run_status in expired.values_list(
        "pk", "run_id", "attempts", "run__status"
    ):
        if run_status in RUN_TERMINAL:
            outcome, fields = "cancelled", {"status": TrialStatus.CANCELLED, "finished_at": now}
        elif attempts >= MAX_ATTEMPTS:
            error = (
                f"given up after {attempts} attempts that never finished (the worker stopped, "
                "or the results could not be written)"
            )
            outcome = "given_up"
            fields = {"status": TrialStatus.ERROR, "finished_at": now, "error": error}
        else:
            outcome, fields = "handed_back", {"status": TrialStatus.PENDING}
        with transaction.atomic():
            # Compare-and-set on the attempt: a worker that just finished it wins. A hand-back
            # also needs the run to be still active (a cancel may have come in meanwhile).
            stale = Trial.objects.filter(
                pk=pk, status=TrialStatus.RUNNING, attempts=attempts, lease_expires_at__lt=now
            )
            if outcome == "handed_back":
                stale = stale.exclude(run__status__in=RUN_TERMINAL)
            changed = stale.update(lease_expires_at=None, **fields)
            if changed and outcome == "given_up":
                Run.objects.filter(pk=run_id).update(
                    trials_done=F("trials_done") + 1, trials_error=F("trials_error") + 1
                )
        report[outcome] += changed
        if changed and outcome == "handed_back":
            handed_back.setdefault(run_id, []).append(pk)

    pending = Trial.objects.filter(run=OuterRef("pk"), status=TrialStatus.PENDING)
    silent = (
        Run.objects.filter(status__in=ACTIVE, finalized_at__isnull=True)
        .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=cutoff))
        .filter(Exists(pending))
        .annotate(last_claim=Max("trials__started_at"))
        .filter(Q(last_claim__isnull=True) | Q(last_claim__lt=cutoff))
        .values_list("pk", "enqueued_at")
    )
    requeued = set()
    for run_id, enqueued_at in list(silent):
        if Run.objects.filter(pk=run_id, enqueued_at=enqueued_at).update(enqueued_at=now):
            enqueue_run(run_id)  # every pending trial, those handed back above included
            requeued.add(run_id)
    report["runs_requeued"] = len(requeued)
    for run_id, trial_ids in handed_back.items():
        if run_id not in requeued:
            enqueue_run(run_id, trial_ids=trial_ids)

    unfinished = Trial.objects.filter(run=OuterRef("pk")).exclude(status__in=TRIAL_FINISHED)
    done = Run.objects.filter(finalized_at__isnull=True).exclude(Exists(unfinished))
    for run_id in list(done.values_list("pk", flat=True)):
        report["finished"] += maybe_finish_run(run_id)
    if any(report.values()):
        log.warning("reaper: %s", report)
    return report


def reap_on_worker_start(sender=None, proc_name=None, **kwargs):
    """django-q2's `post_spawn`: a worker that starts (or replaces a dead one) reaps at once,
    so a restarted cluster does not wait for the schedule's next tick to recover a run.
    Not in django-q2's sync mode, which sends the signal in the caller's own process."""
    # Imported here: django_q's conf reads its models once the app registry is ready.
    from django_q.conf import Conf

    if Conf.SYNC:
        return
    try:
        reap()
    except Exception:  # the worker must start even when the database is briefly away
        log.exception("the start-up reaper pass failed")
    finally:
        connection.close()
