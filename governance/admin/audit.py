"""The audit log: read-only, as everywhere."""

import io

from django.contrib import admin
from django.http import HttpResponse
from django.utils import timezone

from governance.admin.base import (
    ReadOnlyAdmin,
)
from governance.audit.export import write_entries
from governance.models import (
    AuditEntry,
)
from sherlock.core.audit import audit


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ["sequence", "at", "actor_repr", "action", "target_type", "target_repr", "ip"]
    list_filter = [
        ("actor_repr", admin.AllValuesFieldListFilter),
        "action",
        "target_type",
        ("at", admin.DateFieldListFilter),
    ]
    search_fields = ["actor_repr", "action", "target_repr", "reason", "request_id"]
    date_hierarchy = "at"
    actions = ["export_csv", "export_jsonl"]

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.has_perm("governance.view_auditentry")

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def _export(self, request, queryset, fmt, content_type):
        buffer = io.StringIO()
        count = write_entries(queryset.order_by("sequence"), fmt, buffer)
        audit(
            "governance.audit.export",
            actor=request.user,
            after={"format": fmt, "entries": count},
            reason="admin export",
        )
        response = HttpResponse(buffer.getvalue(), content_type=content_type)
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.{fmt}"'
        return response

    @admin.action(description="Export selected entries as CSV", permissions=["view"])
    def export_csv(self, request, queryset):
        return self._export(request, queryset, "csv", "text/csv; charset=utf-8")

    @admin.action(description="Export selected entries as JSON Lines", permissions=["view"])
    def export_jsonl(self, request, queryset):
        return self._export(request, queryset, "jsonl", "application/jsonl; charset=utf-8")
