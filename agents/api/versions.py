"""Agent versions, listed through `for_user`; created and changed by the actions the admin calls
(`CreateDraftVersion`, `UpdateDraftVersion`), tools and denied tools named by `Tool.name`. The
publishing verbs on a version (`request-publication`, `publish`, `retire`, `rollback`) are
governance's and live in `governance.api.versions`, under the same `/versions/{id}/` path."""

import django_filters
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from agents.actions.create_draft_version import CreateDraftVersion
from agents.actions.update_draft_version import UpdateDraftVersion
from agents.api.agents import REFUSED
from agents.api.serializers import (
    AgentVersionInputSerializer,
    AgentVersionSerializer,
    AgentVersionUpdateSerializer,
)
from agents.choices import VersionState
from agents.models import AgentVersion
from sherlock.core.api.errors import refusals
from sherlock.core.errors import ActionConflict, ActionInvalid
from sherlock.core.limits import excerpt

UPDATE_REFUSED = refusals(400, 403, 409)


class VersionFilter(django_filters.FilterSet):
    agent = django_filters.CharFilter(field_name="agent__slug")
    name = django_filters.CharFilter(field_name="name")
    state = django_filters.ChoiceFilter(choices=VersionState.choices)

    class Meta:
        model = AgentVersion
        fields = ["agent", "name", "state"]


@extend_schema_view(
    list=extend_schema(summary="Agent versions you may see"),
    retrieve=extend_schema(summary="One agent version"),
)
class AgentVersionViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = AgentVersionSerializer
    filterset_class = VersionFilter
    queryset = AgentVersion.objects.none()

    def get_queryset(self):
        return (
            AgentVersion.objects.for_user(self.request.user, "view")
            .select_related("agent", "created_by")
            .prefetch_related("tools", "denied_tools")
            .order_by("agent__slug", "-number")
        )

    @extend_schema(
        summary="Create a draft version (Builder)",
        request=AgentVersionInputSerializer,
        responses={201: AgentVersionSerializer, **REFUSED},
    )
    def create(self, request, *args, **kwargs):
        data = AgentVersionInputSerializer(data=request.data, context={"request": request})
        data.is_valid(raise_exception=True)
        version = CreateDraftVersion(acting_user=request.user, **data.validated_data).execute()
        version = self.get_queryset().get(pk=version.pk)
        return Response(AgentVersionSerializer(version).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Find the agent's version of this name, or create it (Builder)",
        description="Idempotent, for the `sherlock` client (docs/client.md): the version of "
        "`agent` named `name` is answered 200 when its adapter and config are the ones given "
        "(tools and notes are not compared), 409 `conflict` naming the field (`adapter` or "
        "`config`) when they differ; otherwise it is created as `POST /versions/` creates one "
        "(CreateDraftVersion, audited) and answered 201. `name` is required here.",
        request=AgentVersionInputSerializer,
        responses={
            200: AgentVersionSerializer,
            201: AgentVersionSerializer,
            **refusals(400, 403, 409),
        },
    )
    @action(detail=False, methods=["post"])
    def ensure(self, request):
        data = AgentVersionInputSerializer(data=request.data, context={"request": request})
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        if not fields.get("name"):
            raise ActionInvalid("name: is required to find a version by it", field="name")
        for _ in range(2):  # a concurrent ensure may create it between our look and our create
            found = self._named(fields["agent"], fields["name"])
            if found is not None:
                for field in ("adapter", "config"):
                    if getattr(found, field) != fields[field]:
                        raise ActionConflict(
                            f"{field}: version {found.number} of {found.agent.slug} is named "
                            f"{excerpt(found.name)} with another {field}; name this one "
                            "differently (e.g. the commit and a hash of its config)",
                            code="conflict",
                            field=field,
                        )
                return Response(AgentVersionSerializer(found).data, status=status.HTTP_200_OK)
            try:
                version = CreateDraftVersion(acting_user=request.user, **fields).execute()
            except ActionConflict as exc:
                if exc.code != "name_taken":
                    raise
                continue
            version = self.get_queryset().get(pk=version.pk)
            return Response(AgentVersionSerializer(version).data, status=status.HTTP_201_CREATED)
        raise ActionConflict("the version was created and removed meanwhile", code="conflict")

    def _named(self, agent, name):
        return self.get_queryset().filter(agent=agent, name=name).first()

    @extend_schema(
        summary="Change a draft's config, notes or tools (Builder)",
        request=AgentVersionUpdateSerializer,
        responses={200: AgentVersionSerializer, **UPDATE_REFUSED},
    )
    def partial_update(self, request, *args, **kwargs):
        version = self.get_object()
        data = AgentVersionUpdateSerializer(
            data=request.data, context={"request": request, "agent": version.agent}
        )
        data.is_valid(raise_exception=True)
        UpdateDraftVersion(
            acting_user=request.user, version=version, **data.validated_data
        ).execute()
        version = self.get_queryset().get(pk=version.pk)
        return Response(AgentVersionSerializer(version).data)
