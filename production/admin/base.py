"""What every production screen shares: rows of the agents the user may see, never edited."""

from django.contrib import admin

from sherlock.core.admin import AuditsHiddenObjects, ReadOnlyMixin, any_visible


class AgentRowsAdmin(AuditsHiddenObjects, ReadOnlyMixin, admin.ModelAdmin):
    """Rows that belong to an agent (`AgentScopedQuerySet`), shown to whoever may see it."""

    list_select_related = ["agent"]

    def get_queryset(self, request):
        rows = self.model._default_manager.for_user(request.user)
        return rows.select_related(*self.list_select_related)

    def has_view_permission(self, request, obj=None):
        if obj is not None:
            return self.get_queryset(request).filter(pk=obj.pk).exists()
        return any_visible(request, self.model)

    def has_module_permission(self, request):
        return self.has_view_permission(request)
