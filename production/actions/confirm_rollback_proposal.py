"""ConfirmRollbackProposal: a Publisher rolls the agent back as a breach proposed."""

from django.db import transaction
from django.utils import timezone

from governance.actions.rollback_version import RollBackVersion
from production.choices import PROPOSAL_STATES, ProposalState
from production.models import RollbackProposal
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.limits import REASON_MAX
from sherlock.core.permissions import user_can


class ConfirmRollbackProposal(Action):
    """Publish the proposal's previous version again through `RollBackVersion` (the same gate
    as any rollback: its own fresh publish request must have passed, or be bypassed), then
    mark the proposal confirmed. A Publisher (or Admin) of the agent; the proposal must be
    open, have a version to go back to, and the breached version must still be live.

    The rollback runs in its own transaction, so a refusal of it (audited by governance as
    `governance.version.refused`) is kept, and this verb is refused with its reason."""

    noun = "rollback_proposal"
    verb = "confirm"
    text_limits = {"reason": REASON_MAX}

    def __init__(self, *, acting_user, proposal, reason=""):
        super().__init__(acting_user=acting_user)
        self.proposal = proposal
        self.reason = reason

    def check(self):
        proposal = RollbackProposal.objects.select_related("agent").get(pk=self.proposal.pk)
        self.proposal = proposal
        if not user_can(self.acting_user, "publish", proposal.agent):
            raise ActionDenied(
                "You may not roll back this agent (Publisher role needed).",
            )
        if proposal.state != ProposalState.OPEN:
            raise ActionConflict(f"This proposal is {proposal.state} already.", code="decided")
        if proposal.to_version_id is None:
            raise ActionConflict(
                "The agent had no earlier live version to roll back to: dismiss the proposal.",
                code="no_previous_version",
            )
        if proposal.agent.live_version_id != proposal.from_version_id:
            raise ActionConflict(
                "The breached version is no longer live: dismiss the proposal.", code="stale"
            )

    def execute_in_transaction(self):
        self.check()
        proposal = self.proposal
        RollBackVersion(
            acting_user=self.acting_user,
            agent_version=proposal.to_version,
            reason=self.reason
            or f"rollback proposal {proposal.pk}: {proposal.breach.get('detail', '')}"[:REASON_MAX],
        ).execute()
        with transaction.atomic():
            return self.perform()

    def perform(self):
        proposal = self.proposal
        now = timezone.now()
        if not PROPOSAL_STATES.move(
            proposal,
            ProposalState.CONFIRMED,
            decided_by=self.acting_user,
            decided_at=now,
            reason=self.reason,
        ):
            raise ActionConflict("The proposal was decided meanwhile.", code="conflict")
        self.audit(
            target=proposal,
            before={"state": ProposalState.OPEN},
            after={
                "state": ProposalState.CONFIRMED,
                "live_version": proposal.to_version.number,
                "rolled_back_from": proposal.from_version.number,
            },
            reason=self.reason,
        )
        proposal.state = ProposalState.CONFIRMED
        return proposal
