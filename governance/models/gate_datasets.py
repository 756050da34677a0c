"""The datasets an agent's versions are gated on, chosen for that agent.

A global publishing policy governs every agent that has no policy of its own, but a dataset
fits only the agents it was written for: `support-basics` says nothing about a billing bot. So a
global policy never carries a dataset from one agent to another; an Admin chooses each agent's
gate datasets (`governance.actions.set_gate_datasets`), one row per (agent, dataset). An
agent's own policy's gate datasets were chosen for it and count too
(`gate_datasets_for`). An agent with none cannot request publication, and the refusal says how
to choose one and who may.
"""

from typing import Any

from django.conf import settings
from django.db import models

from evaluations.models import Dataset
from governance.models.policies import PublishingPolicy


class GateDatasetQuerySet(models.QuerySet):
    def for_agent(self, agent):
        return self.filter(agent=agent)


class GateDataset(models.Model):
    """One dataset chosen as a gate dataset for one agent, by an Admin."""

    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="+")
    dataset = models.ForeignKey("evaluations.Dataset", on_delete=models.CASCADE, related_name="+")
    chosen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    chosen_at = models.DateTimeField(auto_now_add=True)

    objects = GateDatasetQuerySet.as_manager()

    class Meta:
        ordering = ["agent", "dataset__slug"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "dataset"], name="gate_dataset_once_per_agent")
        ]

    def __str__(self):
        return f"{self.dataset} gates {self.agent}"


def gated_dataset_ids(agents):
    """`{agent pk: ids of the datasets it is gated on}` under the policy in force for each of
    `agents` (`gate_datasets_for`, for many at once): what their Builders may run them on
    without a role on the datasets (`evaluations.reads.run_rights`). Three queries, whatever the
    number of agents."""

    agents = list(agents)
    if not agents:
        return {}
    policies = PublishingPolicy.objects.in_force_for_agents(agents)
    own = {pk: policy for pk, policy in policies.items() if policy and policy.agent_id == pk}
    through = PublishingPolicy.gate_datasets.through
    by_policy: dict[Any, Any] = {}
    for policy_id, dataset_id in through.objects.filter(
        publishingpolicy_id__in=[policy.pk for policy in own.values()]
    ).values_list("publishingpolicy_id", "dataset_id"):
        by_policy.setdefault(policy_id, set()).add(dataset_id)
    chosen: dict[Any, Any] = {}
    for agent_id, dataset_id in GateDataset.objects.filter(
        agent_id__in=[agent.pk for agent in agents]
    ).values_list("agent_id", "dataset_id"):
        chosen.setdefault(agent_id, set()).add(dataset_id)
    found = {}
    for agent in agents:
        policy = own.get(agent.pk)
        named = by_policy.get(policy.pk) if policy is not None else None
        found[agent.pk] = named if named else chosen.get(agent.pk, set())
    return found


def gate_datasets_for(agent, policy):
    """The datasets `agent`'s versions are gated on under `policy` (the one in force), by slug:
    the gate datasets of the agent's own policy when it names any (an agent's policy wins over
    everything global), else those an Admin chose for the agent. A global policy's own list
    applies to no agent by itself (the refusal names it as a suggestion)."""

    if policy is not None and policy.agent_id == agent.pk and policy.gate_datasets.exists():
        return policy.gate_datasets.order_by("slug")
    return Dataset.objects.filter(
        pk__in=GateDataset.objects.filter(agent=agent).values("dataset_id")
    ).order_by("slug")
