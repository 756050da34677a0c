"""A breach of the publishing policy over production: the webhook and the rollback proposal.

`look_for_breach(agent_id)` runs after each scoring batch that scored traces of the agent. It
computes the live version's production contract (`contract.production_contract`) and, when a
window shows a breach (a hard gate broken beyond its Wilson interval), opens a rollback
proposal to the previous live version through `OpenRollbackProposal`, which also sends the
`production.breach` webhook. Never a rollback: a Publisher confirms or dismisses it.

Announced once: nothing is opened while the agent has an open proposal, nor within
`DISMISSAL_QUIET` of a dismissal of a proposal for the same live version (the Publisher said
why they keep it; the evidence of the same window would only repeat).
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from agents.choices import VersionState
from agents.models import Agent
from governance.models import PublishRequest
from production.actions.open_rollback_proposal import OpenRollbackProposal
from production.choices import ProposalState
from production.models import RollbackProposal
from production.online.contract import production_contract
from sherlock.core.errors import ActionConflict

DISMISSAL_QUIET = timedelta(hours=24)


def previous_live_version(agent):
    """The version that was live before the current one: the newest version, other than the
    live one, that went live through a publish request, if it is retired now."""

    request = (
        PublishRequest.objects.published()
        .filter(agent_version__agent=agent, agent_version__state=VersionState.RETIRED)
        .exclude(agent_version_id=agent.live_version_id)
        .select_related("agent_version")
        .first()
    )
    return request.agent_version if request is not None else None


def look_for_breach(agent_id, now=None):
    """Open a proposal when the agent's live version breaches; returns it, or None."""

    agent = Agent.objects.select_related("live_version").filter(pk=agent_id).first()
    if agent is None or agent.live_version is None:
        return None
    if RollbackProposal.objects.filter(agent=agent, state=ProposalState.OPEN).exists():
        return None
    now = now or timezone.now()
    if RollbackProposal.objects.filter(
        agent=agent,
        from_version=agent.live_version,
        state=ProposalState.DISMISSED,
        decided_at__gte=now - DISMISSAL_QUIET,
    ).exists():
        return None
    contract = production_contract(agent, now=now)
    found = contract.breaches if contract is not None else []
    if not found:
        return None
    breach = {**found[0], "all": [item["detail"] for item in found]}
    try:
        return OpenRollbackProposal(
            agent=agent,
            from_version=agent.live_version,
            to_version=previous_live_version(agent),
            breach=breach,
        ).execute()
    except ActionConflict:
        return None  # another worker opened it meanwhile
