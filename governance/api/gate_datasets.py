"""An agent's gate datasets: read by who may see the agent, set by a global Admin."""

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from agents.models import Agent
from evaluations.models import Dataset
from governance.actions.set_gate_datasets import SetGateDatasets
from governance.api.serializers import (
    GateDatasetsInputSerializer,
    GateDatasetsSerializer,
)
from governance.models import (
    GateDataset,
    PublishingPolicy,
    gate_datasets_for,
)
from sherlock.core.api.errors import refusals
from sherlock.core.permissions import user_can


def gate_datasets_of(agent, user):
    """The body of `GET /agents/{slug}/gate-datasets/` (`GateDatasetsSerializer`): the Admin's
    choice for `agent` and what its next publish request runs, under the policy in force, as
    `user` may see it. One rule names a dataset on every surface (docs/governance.md, "Who
    reads a dataset's name"): whoever may see an agent reads the names of the datasets it is
    gated on, as its runs, its publish page and the run picker name them; anyone else reads
    only the datasets they hold a role on, and the rest is counted (`hidden`)."""

    chosen = list(
        GateDataset.objects.filter(agent=agent)
        .select_related("dataset", "chosen_by")
        .order_by("dataset__slug")
    )
    policy = PublishingPolicy.objects.in_force_for(agent)
    gated = list(gate_datasets_for(agent, policy).values_list("pk", "slug"))
    named = {row.dataset_id for row in chosen} | {pk for pk, _ in gated}
    if user_can(user, "view", agent):
        visible = named
    else:
        visible = set(
            Dataset.objects.for_user(user).filter(pk__in=named).values_list("pk", flat=True)
        )
    own = policy is not None and policy.agent_id == agent.pk and policy.gate_datasets.exists()
    return {
        "agent": agent.slug,
        "datasets": [row.dataset.slug for row in chosen if row.dataset_id in visible],
        "chosen": [row for row in chosen if row.dataset_id in visible],
        "gated_on": [slug for pk, slug in gated if pk in visible],
        "hidden": len(named - visible),
        "source": "agent_policy" if own else "chosen" if chosen else "none",
    }


class AgentGateDatasetsViewSet(viewsets.GenericViewSet):
    """`/agents/{slug}/gate-datasets/` (the agent itself is `agents.api`): which datasets gate
    the agent's releases. Whoever may see the agent reads them; only a global Admin sets them,
    through `SetGateDatasets` (audited as `governance.gate_datasets.set`, a refusal as
    `governance.gate_datasets.refused`), as in *Admin › Gate datasets*."""

    serializer_class = GateDatasetsSerializer
    queryset = Agent.objects.none()
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"

    def get_queryset(self):
        return Agent.objects.for_user(self.request.user, "view")

    @extend_schema(
        methods=["GET"],
        summary="An agent's gate datasets: chosen, and what its next request runs",
        description="`datasets`: the slugs an Admin chose for the agent (`chosen`: who and "
        "when); `gated_on`: what the agent's next publish request runs, its own policy's gate "
        "datasets when that names some (`source` `agent_policy`), else the chosen ones "
        "(`chosen`), else none (`none`: requesting publication is refused, 409 "
        "`no_gate_datasets`).",
        responses={200: GateDatasetsSerializer, **refusals(404)},
    )
    @extend_schema(
        methods=["PUT"],
        summary="Set an agent's gate datasets (Admin)",
        description="Replaces the choice with `datasets` (slugs; `[]` drops every one) through "
        "`SetGateDatasets`, audited with the slugs before and after. Only a global Admin: "
        "anyone else is answered 403 before the body is read. A request already evaluating "
        "keeps its runs; the next one uses the new choice.",
        request=GateDatasetsInputSerializer,
        responses={200: GateDatasetsSerializer, **refusals(400, 403, 404)},
    )
    @action(detail=True, methods=["get", "put"], url_path="gate-datasets")
    def gate_datasets(self, request, slug=None):
        agent = self.get_object()
        if request.method == "PUT":
            SetGateDatasets(acting_user=request.user, agent=agent, datasets=[]).authorize()
            data = GateDatasetsInputSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            SetGateDatasets(
                acting_user=request.user, agent=agent, datasets=data.validated_data["datasets"]
            ).execute()
        return Response(GateDatasetsSerializer(gate_datasets_of(agent, request.user)).data)


# --- Administration: role grants --------------------------------------------------------------
