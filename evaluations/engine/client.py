"""Client runs (docs/client.md): handing a run whose transcripts were uploaded to the workers.

A run of a `client` version starts `waiting` (`StartRun`); no shard is enqueued for it and the
reaper does not count it as a run that lost its tasks (it is not active). When the client
finishes it (`FinishClientRun`), or when it has waited longer than
`SHERLOCK_CLIENT_RUN_TIMEOUT_HOURS` (`expire_client_runs`, a step of the reaper), `release`
records every work item never uploaded as the agent error "never returned by the client" and
moves the run `waiting -> queued` (compare-and-set): from there its trials are scored by the
same shards, checks, judge and verifiers as any run (`trials.uploaded_answer` gives a client
trial's answer), and it finishes as every run does (`maybe_finish_run`: case results, the
`run_finished` signal, webhooks, the publish request's decision).
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents.adapters.client import NEVER_RETURNED
from evaluations.choices import RUN_STATES, RunStatus, TrialStatus
from evaluations.engine.enqueue import enqueue_run
from evaluations.models import Run, Trial
from sherlock.core.audit import audit

log = logging.getLogger("sherlock.engine")


def release(run_id, *, error=NEVER_RETURNED):
    """Close a waiting client run to uploads and queue it for scoring; returns how many work
    items were never uploaded, or None when the run was not waiting (someone else released or
    cancelled it: nothing changed). Call inside a transaction: the shards go out on commit."""
    run = Run.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.status != RunStatus.WAITING:
        return None
    missing = Trial.objects.filter(
        run_id=run_id, status=TrialStatus.PENDING, uploaded_at__isnull=True
    ).update(error=error)
    RUN_STATES.move(run, RunStatus.QUEUED)
    transaction.on_commit(lambda: enqueue_run(run_id))
    return missing


def expire_client_runs(now=None):
    """Release the client runs that waited longer than `SHERLOCK_CLIENT_RUN_TIMEOUT_HOURS` for
    their client (a CI job killed for good): what was uploaded is scored, the rest is an agent
    error, so a gate run cannot hold its publish request for ever. Returns how many expired;
    each is audited (`evaluations.run.expire`, by the system)."""
    now = now or timezone.now()
    cutoff = now - timedelta(hours=settings.SHERLOCK_CLIENT_RUN_TIMEOUT_HOURS)
    expired = 0
    due = Run.objects.filter(status=RunStatus.WAITING, created_at__lt=cutoff)
    for run_id in list(due.values_list("pk", flat=True)):
        hours = settings.SHERLOCK_CLIENT_RUN_TIMEOUT_HOURS
        with transaction.atomic():
            missing = release(
                run_id, error=f"{NEVER_RETURNED} (the run expired after {hours} hours waiting)"
            )
            if missing is None:
                continue
            run = Run.objects.get(pk=run_id)
            audit(
                "evaluations.run.expire",
                actor=None,
                target=run,
                before={"status": RunStatus.WAITING},
                after={"status": RunStatus.QUEUED, "never_returned": missing},
                reason=f"waited longer than SHERLOCK_CLIENT_RUN_TIMEOUT_HOURS={hours}",
            )
        expired += 1
    if expired:
        log.warning("reaper: %s client runs expired", expired)
    return expired
