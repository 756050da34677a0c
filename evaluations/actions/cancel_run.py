"""CancelRun: stop a queued or running run; what is running finishes, nothing new starts."""

from django.db import transaction
from django.utils import timezone

from evaluations.choices import RUN_STATES, RunStatus, TrialStatus
from evaluations.engine import maybe_finish_run
from evaluations.models import Run, Trial
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.permissions import user_can


class CancelRun(Action):
    """Cancel `run`: a Builder of its agent or an Admin (who holds every agent's build right).

    Compare-and-set from `queued`/`running` to `cancelled`, in the same transaction as turning
    its pending trials into `cancelled` (a worker's claim is a compare-and-set on `pending`, so
    none of them can start after this commits). Trials already running finish and are kept;
    the last of them finishes the run (`evaluations.engine.maybe_finish_run`), which stays
    `cancelled` and sends `run_finished` once. With none running, the run is finished on
    commit.
    """

    noun = "run"
    verb = "cancel"

    def __init__(self, *, acting_user, run):
        super().__init__(acting_user=acting_user)
        self.run = run

    def check(self):
        agent = self.run.agent_version.agent
        if not user_can(self.acting_user, "build", agent):
            raise ActionDenied("You may not cancel runs of this agent (Builder role needed).")
        if not RUN_STATES.may_move(self.run.status, RunStatus.CANCELLED):
            raise ActionConflict(f"The run is already {self.run.status}.")

    def perform(self):

        # From the status as it is now, locked (a shard may have started the run since it was
        # read).
        run = Run.objects.select_for_update().get(pk=self.run.pk)
        before = run.status
        if not RUN_STATES.may_move(before, RunStatus.CANCELLED) or not RUN_STATES.move(
            run, RunStatus.CANCELLED
        ):
            raise ActionConflict(f"The run is already {before}.")
        now = timezone.now()
        cancelled = Trial.objects.filter(run=run, status=TrialStatus.PENDING).update(
            status=TrialStatus.CANCELLED, finished_at=now
        )
        running = Trial.objects.filter(run=run, status=TrialStatus.RUNNING).count()
        run.status = self.run.status = RunStatus.CANCELLED
        self.audit(
            target=run,
            before={"status": before},
            after={
                "status": RunStatus.CANCELLED,
                "trials_cancelled": cancelled,
                "trials_still_running": running,
            },
        )
        run_id = run.pk
        transaction.on_commit(lambda: maybe_finish_run(run_id))
        return run
