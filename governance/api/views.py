"""The governance API: the publishing verbs on versions, publish requests with their decision,
bypasses and the audit log. Every verb calls its action and nothing else; the exception handler
(`sherlock.core.api`) turns a refusal into 403 (role) or 409 (state), with the reason. Objects come
from `for_user`, so a user who may not see one gets 404 before any action is tried."""

import django_filters
from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response

from agents.api.serializers import AgentVersionSerializer
from agents.models import AgentVersion
from governance.actions.approve_bypass import ApproveBypass
from governance.actions.deny_bypass import DenyBypass
from governance.actions.publish_version import PublishVersion
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.actions.retire_version import RetireVersion
from governance.actions.revoke_bypass import RevokeBypass
from governance.actions.rollback_version import RollBackVersion
from governance.api.serializers import (
    AuditEntrySerializer,
    BypassInputSerializer,
    BypassSerializer,
    PublishRequestSerializer,
    ReasonInputSerializer,
)
from governance.choices import BypassState, RequestState
from governance.models import AuditEntry, Bypass, PublishRequest
from sherlock.core.api import refusals

REFUSED = refusals(400, 403, 404, 409, s400="Invalid input (e.g. a thin reason).")


def publish_requests():
    return PublishRequest.objects.select_related(
        "agent_version__agent", "policy", "requested_by", "published_by"
    ).prefetch_related(
        "runs",
        Prefetch(
            "bypasses",
            queryset=Bypass.objects.select_related("requested_by", "approved_by").order_by("pk"),
        ),
    )


class VersionVerbViewSet(viewsets.GenericViewSet):
    """The publishing verbs of `/versions/{id}/` (the version itself is `agents.api`)."""

    serializer_class = AgentVersionSerializer
    queryset = AgentVersion.objects.none()

    def get_queryset(self):
        return AgentVersion.objects.for_user(self.request.user, "view").select_related(
            "agent", "created_by"
        )

    @extend_schema(
        summary="Request publication: start the gate runs (Builder)",
        request=None,
        responses={201: PublishRequestSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"], url_path="request-publication")
    def request_publication(self, request, pk=None):
        version = self.get_object()
        created = RequestPublication(acting_user=request.user, agent_version=version).execute()
        body = PublishRequestSerializer(publish_requests().get(pk=created.pk)).data
        return Response(body, status=status.HTTP_201_CREATED)

    def _verb(self, request, action_class):
        version = self.get_object()
        data = ReasonInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        action_class(
            acting_user=request.user, agent_version=version, reason=data.validated_data["reason"]
        ).execute()
        return Response(AgentVersionSerializer(self.get_queryset().get(pk=version.pk)).data)

    @extend_schema(
        summary="Publish a version whose gate passed, or was bypassed (Publisher)",
        request=ReasonInputSerializer,
        responses={200: AgentVersionSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def publish(self, request, pk=None):
        return self._verb(request, PublishVersion)

    @extend_schema(
        summary="Retire the live version (Publisher)",
        request=ReasonInputSerializer,
        responses={200: AgentVersionSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def retire(self, request, pk=None):
        return self._verb(request, RetireVersion)

    @extend_schema(
        summary="Roll back to a retired version, through the same gate (Publisher)",
        request=ReasonInputSerializer,
        responses={200: AgentVersionSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def rollback(self, request, pk=None):
        return self._verb(request, RollBackVersion)


class PublishRequestFilter(django_filters.FilterSet):
    agent = django_filters.CharFilter(field_name="agent_version__agent__slug")
    state = django_filters.ChoiceFilter(choices=RequestState.choices)

    class Meta:
        model = PublishRequest
        fields = ["agent", "agent_version", "state"]


@extend_schema_view(
    list=extend_schema(summary="Publish requests you may see"),
    retrieve=extend_schema(summary="One publish request with its decision (every gate)"),
)
class PublishRequestViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    serializer_class = PublishRequestSerializer
    filterset_class = PublishRequestFilter
    queryset = PublishRequest.objects.none()

    def get_queryset(self):
        return publish_requests().filter(
            pk__in=PublishRequest.objects.for_user(self.request.user, "view").values("pk")
        )

    @extend_schema(
        summary="Bypass the blocked decision, with a reason (Admin)",
        request=BypassInputSerializer,
        responses={201: BypassSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def bypass(self, request, pk=None):
        publish_request = self.get_object()
        data = BypassInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        bypass = RequestBypass(
            acting_user=request.user,
            publish_request=publish_request,
            reason=data.validated_data["reason"],
        ).execute()
        body = BypassSerializer(Bypass.objects.get(pk=bypass.pk)).data
        return Response(body, status=status.HTTP_201_CREATED)


class BypassFilter(django_filters.FilterSet):
    state = django_filters.ChoiceFilter(choices=BypassState.choices)

    class Meta:
        model = Bypass
        fields = ["publish_request", "state"]


@extend_schema_view(
    list=extend_schema(summary="Bypasses you may see"),
    retrieve=extend_schema(summary="One bypass"),
)
class BypassViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = BypassSerializer
    filterset_class = BypassFilter
    queryset = Bypass.objects.none()

    def get_queryset(self):
        return Bypass.objects.for_user(self.request.user, "view").select_related(
            "requested_by", "approved_by"
        )

    def _verb(self, request, action_class):
        bypass = self.get_object()
        data = ReasonInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        action_class(
            acting_user=request.user, bypass=bypass, reason=data.validated_data["reason"]
        ).execute()
        return Response(BypassSerializer(self.get_queryset().get(pk=bypass.pk)).data)

    @extend_schema(
        summary="Approve a requested bypass (a second, different Admin)",
        request=ReasonInputSerializer,
        responses={200: BypassSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        return self._verb(request, ApproveBypass)

    @extend_schema(
        summary="Deny a requested bypass (Admin)",
        request=ReasonInputSerializer,
        responses={200: BypassSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def deny(self, request, pk=None):
        return self._verb(request, DenyBypass)

    @extend_schema(
        summary="Revoke a bypass before it is used (Admin)",
        request=ReasonInputSerializer,
        responses={200: BypassSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None):
        return self._verb(request, RevokeBypass)


class CanReadAuditLog(permissions.BasePermission):
    """The audit log is for Admins: the global `view_auditentry` permission (DESIGN 2)."""

    message = "Only an Admin may read the audit log."

    def has_permission(self, request, view):
        return bool(request.user and request.user.has_perm("governance.view_auditentry"))


class AuditFilter(django_filters.FilterSet):
    actor = django_filters.CharFilter(field_name="actor_repr", help_text="Username of the actor.")
    action = django_filters.CharFilter(help_text="Exact action code, e.g. governance.bypass.use.")
    action_prefix = django_filters.CharFilter(
        field_name="action", lookup_expr="startswith", help_text="e.g. governance.bypass."
    )
    target_type = django_filters.CharFilter(help_text="e.g. agents.agentversion.")
    target_id = django_filters.CharFilter()
    since = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="lte")

    class Meta:
        model = AuditEntry
        fields = ["actor", "action", "action_prefix", "target_type", "target_id", "since", "until"]


class AuditCursorPagination(CursorPagination):
    """Newest first by sequence, paged by a cursor (`next`, `previous`): the log only grows, so
    a page costs the same at any depth and no COUNT of the whole log is made per request."""

    ordering = "-sequence"


@extend_schema_view(
    list=extend_schema(summary="The audit log, newest first (Admin)"),
    retrieve=extend_schema(summary="One audit entry by sequence (Admin)"),
)
class AuditEntryViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = AuditEntrySerializer
    filterset_class = AuditFilter
    permission_classes = [permissions.IsAuthenticated, CanReadAuditLog]
    lookup_field = "sequence"
    pagination_class = AuditCursorPagination
    queryset = AuditEntry.objects.order_by("-sequence")
