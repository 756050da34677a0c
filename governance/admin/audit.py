"""The audit log: read-only, as everywhere."""

import io

from django.contrib import admin, messages

from governance.actions.export_audit import ExportAudit
from governance.admin.base import (
    ReadOnlyAdmin,
)
from governance.audit.export import export_response
from governance.models import (
    AuditEntry,
)
from sherlock.core.errors import ActionError


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

    def _export(self, request, queryset, fmt):
        buffer = io.StringIO()
        try:
            ExportAudit(
                acting_user=request.user,
                entries=queryset,
                fmt=fmt,
                out=buffer,
                reason="admin export",
            ).execute()
        except ActionError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return None
        return export_response(buffer.getvalue(), fmt)

    @admin.action(description="Export selected entries as CSV", permissions=["view"])
    def export_csv(self, request, queryset):
        return self._export(request, queryset, "csv")

    @admin.action(description="Export selected entries as JSON Lines", permissions=["view"])
    def export_jsonl(self, request, queryset):
        return self._export(request, queryset, "jsonl")
