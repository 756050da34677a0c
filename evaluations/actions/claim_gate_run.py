"""ClaimGateRun: the `sherlock` client takes up a waiting gate run of a client version.

A publish request for a `client` version starts its gate runs `waiting` (`StartRun`): the
client fulfils them (docs/client.md) by uploading to them, so a gate run keeps the policy's
dataset version and repetitions whoever uploads. Claiming records where the answers come from
(the git and CI metadata the client reports) on the run, audited; the run is the same.
"""

from evaluations.choices import RunPurpose, RunStatus
from evaluations.models import Run
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.permissions import user_can


class ClaimGateRun(Action):
    """Record `source` on the waiting gate run `run`; a Builder of its agent or an Admin."""

    noun = "run"
    verb = "claim"

    def __init__(self, *, acting_user, run, source=None):
        super().__init__(acting_user=acting_user)
        self.run = run
        self.source = source or {}

    def check(self):
        if not user_can(self.acting_user, "build", self.run.agent_version.agent):
            raise ActionDenied("You may not upload to runs of this agent (Builder role needed).")
        if self.run.purpose != RunPurpose.GATE or self.run.status != RunStatus.WAITING:
            raise ActionConflict(
                f"Run {self.run.pk} is not a waiting gate run.", code="not_waiting_gate_run"
            )

    def perform(self):
        run = Run.objects.select_for_update().get(pk=self.run.pk)
        if run.status != RunStatus.WAITING:
            raise ActionConflict(f"Run {run.pk} is {run.status}.", code="not_waiting_gate_run")
        if self.source and self.source != run.source:
            before = run.source
            run.source = self.source
            run.save(update_fields=["source"])
            self.audit(
                target=run,
                before={"source": before},
                after={"source": run.source},
            )
        return run
