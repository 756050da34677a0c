"""Online rules, the scores they gave, and the rollback proposals they opened."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from production.admin.base import AgentRowsAdmin
from production.models import OnlineRule, RollbackProposal, TraceScore
from sherlock.core.admin import EstimatedCountPaginator


def production_page(obj):
    return format_html(
        '<a href="{}">The agent\'s production page</a>, where its online rule is changed and '
        "its proposals are confirmed or dismissed",
        reverse("production:agent", args=[obj.agent.slug]),
    )


@admin.register(OnlineRule)
class OnlineRuleAdmin(AgentRowsAdmin):
    list_display = ["agent", "active", "sampling_rate", "library_version"]
    list_filter = ["active"]
    list_select_related = ["agent", "library_version__dataset"]
    readonly_fields = ["page"]

    @admin.display(description="changed on")
    def page(self, obj):
        return production_page(obj)


@admin.register(TraceScore)
class TraceScoreAdmin(AgentRowsAdmin):
    list_display = ["trace", "agent", "state", "scored_at"]
    list_filter = ["state"]
    list_select_related = ["agent", "trace__agent"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False


@admin.register(RollbackProposal)
class RollbackProposalAdmin(AgentRowsAdmin):
    list_display = ["__str__", "from_version", "to_version", "state", "opened_at"]
    list_filter = ["state"]
    list_select_related = ["agent", "from_version", "to_version"]
    readonly_fields = ["page"]

    @admin.display(description="decided on")
    def page(self, obj):
        return production_page(obj)
