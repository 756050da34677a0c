"""Admin for governance: policies are editable by Admins; requests, decisions, bypasses and the
audit log are read-only here (they change only through the governance actions)."""

from django.contrib import admin

from governance.models import AuditEntry, Bypass, PublishingPolicy, PublishRequest


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(PublishingPolicy)
class PublishingPolicyAdmin(admin.ModelAdmin):
    list_display = ["name", "scope_key", "version", "enforcement", "min_case_pass_rate"]
    list_filter = ["enforcement"]
    readonly_fields = ["scope_key", "version", "created_by", "created_at"]
    filter_horizontal = ["gate_datasets"]
    raw_id_fields = ["agent"]


@admin.register(PublishRequest)
class PublishRequestAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "state", "requested_by", "decided_at", "created_at"]
    list_filter = ["state"]
    list_select_related = ["agent_version__agent", "requested_by"]


@admin.register(Bypass)
class BypassAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "publish_request", "requested_by", "approved_by", "expires_at"]
    list_filter = ["state"]
    list_select_related = ["publish_request__agent_version__agent", "requested_by", "approved_by"]


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ["sequence", "at", "actor_repr", "action", "target_type", "target_repr", "ip"]
    list_filter = ["action", "target_type", ("at", admin.DateFieldListFilter)]
    search_fields = ["actor_repr", "action", "target_repr", "reason", "request_id"]
    date_hierarchy = "at"

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and (
            request.user.is_superuser or request.user.has_perm("governance.view_auditentry")
        )
