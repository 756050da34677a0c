"""The audit log, read-only, in cursor pages."""

import django_filters
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import permissions, viewsets
from rest_framework.pagination import CursorPagination

from governance.api.serializers import (
    AuditEntrySerializer,
)
from governance.models import (
    AuditEntry,
)
from sherlock.core.api.filters import UTCDateTimeFilter


class CanReadAuditLog(permissions.BasePermission):
    """The audit log is for Admins: the global `view_auditentry` permission."""

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
    since = UTCDateTimeFilter(field_name="at", lookup_expr="gte")
    until = UTCDateTimeFilter(field_name="at", lookup_expr="lte")

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


# --- Administration: publishing policies ------------------------------------------------------
