"""Production traces (their spans are drawn as a tree on the trace's page)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from production.admin.base import AgentRowsAdmin
from production.models import Trace
from sherlock.core.admin import EstimatedCountPaginator


@admin.register(Trace)
class TraceAdmin(AgentRowsAdmin):
    list_display = [
        "trace_id",
        "agent",
        "agent_version",
        "state",
        "span_count",
        "has_error",
        "latency_ms",
        "received_at",
    ]
    list_filter = ["state", "has_error", "dialect"]
    list_select_related = ["agent", "agent_version"]
    search_fields = ["trace_id", "session", "end_user"]
    date_hierarchy = "received_at"
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    exclude = ["transcript", "resource"]
    readonly_fields = ["page"]

    @admin.display(description="on its page")
    def page(self, obj):
        return format_html(
            '<a href="{}">The trace\'s page</a>: its transcript, spans as a tree, scores, and '
            '"add to a dataset"',
            reverse("production:trace-detail", args=[obj.pk]),
        )
