"""OpenRollbackProposal: a breach over production proposes the previous live version."""

from django.db import IntegrityError, transaction
from django.utils import timezone

from governance.choices import WebhookEvent
from governance.webhooks import notify
from production.choices import ProposalState
from production.models import RollbackProposal
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict


class OpenRollbackProposal(Action):
    """Open a proposal to roll `agent` back from its live `from_version` to `to_version` (its
    previous live version, or None when there is none), with the `breach` found
    (`production.online.breach`), and send the `production.breach` webhook. Done by Sherlock
    itself (no acting user), never a rollback: a Publisher decides. Refused while the agent
    has an open proposal (one at a time; the database's unique constraint settles a race)."""

    noun = "rollback_proposal"
    verb = "open"

    def __init__(self, *, agent, from_version, to_version, breach, acting_user=None):
        super().__init__(acting_user=acting_user)
        self.agent = agent
        self.from_version = from_version
        self.to_version = to_version
        self.breach = breach

    def check(self):
        if RollbackProposal.objects.filter(agent=self.agent, state=ProposalState.OPEN).exists():
            raise ActionConflict("This agent has an open rollback proposal.", code="open")

    def perform(self):
        try:
            with transaction.atomic():
                proposal = RollbackProposal.objects.create(
                    agent=self.agent,
                    from_version=self.from_version,
                    to_version=self.to_version,
                    breach=self.breach,
                )
        except IntegrityError:
            raise ActionConflict("This agent has an open rollback proposal.", code="open") from None
        after = {
            "from_version": self.from_version.number,
            "to_version": self.to_version.number if self.to_version else None,
            "breach": self.breach,
        }
        self.audit(
            actor=None,
            target=proposal,
            after=after,
            reason=self.breach.get("detail", ""),
        )
        notify(
            WebhookEvent.PRODUCTION_BREACH,
            {
                "agent": self.agent.slug,
                "live_version": self.from_version.number,
                "previous_version": self.to_version.number if self.to_version else None,
                "rollback_proposal": proposal.pk,
                "breach": self.breach,
                "opened_at": timezone.now(),
            },
        )
        return proposal
