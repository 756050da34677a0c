"""Bypasses of a failed gate: request, approve, deny, revoke."""

import django_filters
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from governance.actions.approve_bypass import ApproveBypass
from governance.actions.deny_bypass import DenyBypass
from governance.actions.revoke_bypass import RevokeBypass
from governance.api.responses import REFUSED
from governance.api.serializers import (
    BypassSerializer,
    ReasonInputSerializer,
)
from governance.choices import BypassState
from governance.models import (
    Bypass,
)


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
