"""Versions: the publishing verbs (request publication, publish, retire, roll back) as admin
actions, and "Start a run…" (`evaluations.admin.start_run`)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from agents.admin import AgentVersionAdmin as BaseAgentVersionAdmin
from agents.models import AgentVersion
from evaluations.admin.start_run import StartRunPermission, start_run_action
from governance.actions.publish_version import PublishVersion
from governance.actions.request_publication import RequestPublication
from governance.actions.retire_version import RetireVersion
from governance.actions.rollback_version import RollBackVersion
from governance.admin.base import VerbPermissions
from sherlock.core.admin import verb_action

admin.site.unregister(AgentVersion)


@admin.register(AgentVersion)
class AgentVersionAdmin(StartRunPermission, VerbPermissions, BaseAgentVersionAdmin):
    actions = ["start_run", "request_publication", "publish", "retire", "roll_back"]
    list_display = [*BaseAgentVersionAdmin.list_display, "publish_page"]

    @admin.display(description="gate")
    def publish_page(self, obj):
        url = reverse("governance:publish", args=[obj.pk])
        return format_html('<a href="{}">publish page</a>', url)

    @admin.action(description="Start a run…", permissions=["start_run"])
    def start_run(self, request, queryset):
        """Choose a dataset version and the repetitions, see the estimate, start
        (evaluations.admin.start_run)."""
        return start_run_action(
            self, request, queryset, selected="agent_version", description="Start a run"
        )

    request_publication = verb_action(
        RequestPublication,
        "publication requested, gate runs started",
        description="Request publication (start the gate runs)",
        permission="build",
        subject="agent_version",
    )
    publish = verb_action(
        PublishVersion,
        "published",
        description="Publish (gate passed or bypassed)",
        permission="publish",
        subject="agent_version",
    )
    retire = verb_action(
        RetireVersion,
        "retired",
        description="Retire",
        permission="publish",
        subject="agent_version",
    )
    roll_back = verb_action(
        RollBackVersion,
        "rolled back to",
        description="Roll back to this retired version",
        permission="publish",
        subject="agent_version",
    )
