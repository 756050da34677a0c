"""Enqueueing a run's work: one django-q2 task per shard of its pending trials.

`StartRun` calls `enqueue_run` when its transaction commits, and the reaper when a run's tasks
were lost or its trials were handed back (evaluations.engine.reaper). Each task is
`evaluations.tasks.run_shard`, which runs `evaluations.engine.shards.run_shard`.
"""

from django.conf import settings
from django.utils import timezone

from evaluations.choices import RunStatus, TrialStatus
from evaluations.models import Run, Trial
from sherlock.core.queue import enqueue


def enqueue_run(run_id, *, trial_ids=None, broker=None, uploaded=False):
    """Enqueue one django-q2 task per shard of the run's pending trials (or of `trial_ids`).

    Shards are how work is spread among workers at the start (a worker that finishes its own
    shard helps with the run's other pending trials: `evaluations.engine.shards.Work`).
    `broker` is django-q2's (None: the configured one). Enqueueing every pending trial records
    `enqueued_at`, which the reaper reads as a sign of life (a few handed-back trials say
    nothing about the others).

    A client run waiting for its uploads is enqueued only for trials it has `uploaded` (a batch
    just stored, scored while the client's calls go on: docs/client.md); its other trials wait
    for the finish. A run with no pending trial left gets one empty shard, which finishes it.
    """
    if not uploaded and Run.objects.filter(pk=run_id, status=RunStatus.WAITING).exists():
        return  # a client run waits for its uploads: no worker may take it (docs/client.md)
    if trial_ids is None:
        trial_ids = list(
            Trial.objects.filter(run_id=run_id, status=TrialStatus.PENDING)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        Run.objects.filter(pk=run_id).update(enqueued_at=timezone.now())
        if not trial_ids:  # everything was scored already (uploads scored early): finish it
            enqueue(
                "evaluations.tasks.run_shard",
                run_id,
                [],
                task_name=f"run-{run_id}-finish",
                group=f"run-{run_id}",
                broker=broker,
            )
            return
    size = settings.SHERLOCK_SHARD_SIZE
    for start in range(0, len(trial_ids), size):
        enqueue(
            "evaluations.tasks.run_shard",
            run_id,
            list(trial_ids[start : start + size]),
            task_name=f"run-{run_id}-shard-{start // size}",
            group=f"run-{run_id}",
            broker=broker,
        )
