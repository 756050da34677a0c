"""DismissRollbackProposal: a Publisher keeps the live version, and says why."""

from django.utils import timezone

from governance.actions.base import substantive_reason
from production.choices import PROPOSAL_STATES, ProposalState
from production.models import RollbackProposal
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.limits import REASON_MAX
from sherlock.core.permissions import user_can


class DismissRollbackProposal(Action):
    """Close an open proposal without rolling back (a Publisher or Admin of the agent), with a
    substantive reason (as a bypass needs one). A later breach of the same live version opens
    a new proposal only after `breach.DISMISSAL_QUIET` has passed."""

    noun = "rollback_proposal"
    verb = "dismiss"
    text_limits = {"reason": REASON_MAX}

    def __init__(self, *, acting_user, proposal, reason):
        super().__init__(acting_user=acting_user)
        self.proposal = proposal
        self.reason = reason

    def check(self):
        proposal = RollbackProposal.objects.select_related("agent").get(pk=self.proposal.pk)
        self.proposal = proposal
        if not user_can(self.acting_user, "publish", proposal.agent):
            raise ActionDenied("You may not decide this proposal (Publisher role needed).")
        if proposal.state != ProposalState.OPEN:
            raise ActionConflict(f"This proposal is {proposal.state} already.", code="decided")
        self.reason = substantive_reason(self.reason)

    def perform(self):
        proposal = self.proposal
        if not PROPOSAL_STATES.move(
            proposal,
            ProposalState.DISMISSED,
            decided_by=self.acting_user,
            decided_at=timezone.now(),
            reason=self.reason,
        ):
            raise ActionConflict("The proposal was decided meanwhile.", code="conflict")
        self.audit(
            target=proposal,
            before={"state": ProposalState.OPEN},
            after={"state": ProposalState.DISMISSED},
            reason=self.reason,
        )
        proposal.state = ProposalState.DISMISSED
        return proposal
