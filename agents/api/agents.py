"""Agents, listed through `for_user` (a user who may not see one gets 404), created by
`CreateAgent`, the action the admin calls."""

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response

from agents.actions.create_agent import CreateAgent
from agents.api.serializers import (
    AgentInputSerializer,
    AgentSerializer,
)
from agents.models import Agent
from sherlock.core.api.errors import refusals

REFUSED = refusals(400, 403)


@extend_schema_view(
    list=extend_schema(summary="Agents you may see"),
    retrieve=extend_schema(summary="One agent"),
)
class AgentViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = AgentSerializer
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"  # a slug: anything else is a 404 before the database
    queryset = Agent.objects.none()  # the schema's model; requests use get_queryset

    def get_queryset(self):
        return Agent.objects.for_user(self.request.user, "view").select_related("owner")

    @extend_schema(
        summary="Register an agent (Builder)",
        request=AgentInputSerializer,
        responses={201: AgentSerializer, **REFUSED},
    )
    def create(self, request, *args, **kwargs):
        data = AgentInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        agent = CreateAgent(acting_user=request.user, **data.validated_data).execute()
        return Response(AgentSerializer(agent).data, status=status.HTTP_201_CREATED)
