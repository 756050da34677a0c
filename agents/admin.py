"""Admin for agents: governed fields (version state, live version) are read-only here; they
change only through the publishing actions."""

from django.contrib import admin

from agents.models import Agent, AgentVersion, Tool


class VersionInline(admin.TabularInline):
    model = AgentVersion
    fields = ["number", "state", "adapter", "config_hash", "created_by", "created_at"]
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "live_version", "owner", "created_at"]
    list_select_related = ["live_version", "owner"]
    search_fields = ["slug", "name"]
    readonly_fields = ["live_version", "created_at"]
    raw_id_fields = ["owner"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [VersionInline]

    def get_queryset(self, request):
        return Agent.objects.for_user(request.user, "view").select_related("live_version", "owner")


@admin.register(AgentVersion)
class AgentVersionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "state", "adapter", "created_by", "created_at"]
    list_filter = ["state", "adapter"]
    list_select_related = ["agent", "created_by"]
    search_fields = ["agent__slug", "notes"]
    readonly_fields = ["state", "config_hash", "created_by", "created_at"]
    raw_id_fields = ["agent"]
    filter_horizontal = ["tools", "denied_tools"]

    def get_queryset(self, request):
        from agents.models import Agent

        agents = Agent.objects.for_user(request.user, "view")
        return super().get_queryset(request).filter(agent__in=agents)

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(Tool)
class ToolAdmin(admin.ModelAdmin):
    list_display = ["name", "effectful", "high_impact"]
    list_filter = ["effectful", "high_impact"]
    search_fields = ["name", "description"]
