"""FinishClientRun: the client is done uploading; score the run as every run is scored.

Every work item never uploaded becomes the agent error "never returned by the client" (never
silently missing), and the run moves `waiting -> queued` (`evaluations.engine.release`): the
workers score the uploaded transcripts with the engine, checks, judge and verifiers of a run
Sherlock executed, and the run finishes as every run does (case results, `run_finished`,
webhooks, the publish request waiting for it).

Idempotent: finishing a run that is no longer waiting (scoring, finished, cancelled) changes
nothing and says so (`self.finished_now` False), so a client that lost the answer may ask again.
"""

from agents.choices import Adapter
from evaluations.choices import RunStatus, TrialStatus
from evaluations.engine import release
from evaluations.models import Run, Trial
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.permissions import user_can


class FinishClientRun(Action):
    """Close `run` to uploads and queue it for scoring; a Builder of its agent or an Admin."""

    noun = "run"
    verb = "finish"

    def __init__(self, *, acting_user, run):
        super().__init__(acting_user=acting_user)
        self.run = run
        self.finished_now = False

    def check(self):
        if not user_can(self.acting_user, "build", self.run.agent_version.agent):
            raise ActionDenied("You may not finish runs of this agent (Builder role needed).")
        if self.run.agent_version.adapter != Adapter.CLIENT:
            raise ActionConflict(
                f"Run {self.run.pk} is not a client run: Sherlock finishes it itself.",
                code="not_client_run",
            )

    def perform(self):

        uploaded = Trial.objects.filter(run_id=self.run.pk, uploaded_at__isnull=False)
        missing = release(self.run.pk)
        run = Run.objects.get(pk=self.run.pk)
        if missing is None:
            return run  # not waiting: someone finished or cancelled it already
        self.finished_now = True
        self.audit(
            target=run,
            before={"status": RunStatus.WAITING},
            after={
                "status": run.status,
                "uploaded": uploaded.count(),
                "uploaded_errors": uploaded.exclude(error="").count(),
                "never_returned": missing,
                "pending": Trial.objects.filter(run_id=run.pk, status=TrialStatus.PENDING).count(),
            },
        )
        return run
