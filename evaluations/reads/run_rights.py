"""Running is a right of its own (docs/governance.md, "Who may run what").

A Builder of an agent runs it on the datasets they may see (a role on the dataset, or a global
role), and on **the datasets the agent is gated on** (the ones an Admin chose as its gate
datasets, or those of the agent's own policy), without any right to see or edit those datasets
otherwise: running an agent on its own gate is part of building it. Which datasets an agent is
gated on is governance's to say: it registers a source here (`RUN_RIGHTS`) in its `ready()`, so
this app reads it without importing governance.

Every surface that starts or plans a run asks this module: *Start a run* (its dataset picker),
`StartRun`, schedules, `manage.py evaluate --user`, the API's run creation and the client.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from agents.models import Agent
from evaluations.models import Dataset, DatasetVersion
from sherlock.core.permissions import user_can

# Callables `(agents) -> {agent pk: dataset ids}`: the datasets each agent's Builders may run
# it on. In a constant number of queries whatever the number of agents.
RUN_RIGHTS: list[Any] = []


def gate_dataset_ids(agent):
    """The ids of the datasets the registered sources let `agent`'s Builders run it on."""
    return gated_of([agent]).get(agent.pk, set())


def gated_of(agents):
    """`{agent pk: dataset ids}` of the registered sources, for many agents at once."""
    agents = list(agents)
    found: dict[int, set[str]] = {agent.pk: set() for agent in agents}
    for source in RUN_RIGHTS:
        for pk, ids in source(agents).items():
            found.setdefault(pk, set()).update(ids)
    return found


def runnable_datasets(user, agent):
    """The datasets `user` may run `agent` on: those they may see, and, when they build the
    agent, the datasets it is gated on."""
    visible = Dataset.objects.for_user(user)
    if agent is None or not RUN_RIGHTS or not visible.query.has_filters():
        return visible
    if not user_can(user, "build", agent):
        return visible
    gated = gate_dataset_ids(agent)
    if not gated:
        return visible
    return Dataset.objects.filter(Q(pk__in=visible.values("pk")) | Q(pk__in=gated))


def may_run_on(user, agent, dataset):
    """Whether `user` may run `agent` on `dataset` (the dataset part of the right: building the
    agent is asked separately)."""
    if user_can(user, "view", dataset):
        return True
    return user_can(user, "build", agent) and dataset.pk in gate_dataset_ids(agent)


def datasets_to_run(user):
    """The datasets `user` may run some agent on: those they may see, and those an agent they
    build is gated on (what the start-run and schedule pickers offer before an agent is chosen;
    `StartRun` still decides per agent). A constant number of queries."""

    visible = Dataset.objects.for_user(user)
    if not RUN_RIGHTS or not visible.query.has_filters():
        return visible  # every dataset already (a global role)
    gated = set().union(*gated_of(Agent.objects.for_user(user, "build")).values())
    if not gated:
        return visible
    return Dataset.objects.filter(Q(pk__in=visible.values("pk")) | Q(pk__in=gated))


def dataset_versions_to_run(user):
    """The versions of `datasets_to_run`."""

    return DatasetVersion.objects.filter(dataset__in=datasets_to_run(user)).select_related(
        "dataset"
    )
