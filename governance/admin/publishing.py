"""Publish requests and bypasses: read-only but for the bypass verbs (request, approve, deny,
revoke), each through its action."""

from django import forms
from django.contrib import admin
from django.contrib.admin import helpers
from django.template.response import TemplateResponse

from governance.actions.approve_bypass import ApproveBypass
from governance.actions.deny_bypass import DenyBypass
from governance.actions.publish_version import PublishVersion
from governance.actions.request_bypass import RequestBypass
from governance.actions.revoke_bypass import RevokeBypass
from governance.admin.base import AgentScopedReadOnlyAdmin
from governance.models import (
    Bypass,
    PublishRequest,
)
from governance.publishing.decision import gate_label
from sherlock.core.admin import run_verb, verb_action


class BypassReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        help_text="Why this gate must be bypassed: at least 30 characters of real explanation.",
        required=False,
    )


class BypassInline(admin.TabularInline):
    model = Bypass
    fields = readonly_fields = (
        "state",
        "requested_by",
        "approved_by",
        "reason",
        "expires_at",
        "used_at",
    )
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(PublishRequest)
class PublishRequestAdmin(AgentScopedReadOnlyAdmin):
    list_display = ["__str__", "state", "requested_by", "decided_at", "created_at"]
    list_filter = ["state"]
    list_select_related = ["agent_version__agent", "requested_by"]
    inlines = [BypassInline]
    actions = ["publish", "request_bypass"]

    def governed(self, obj):
        return obj.agent_version.agent

    publish = verb_action(
        PublishVersion,
        "published",
        description="Publish the version",
        permission="publish",
        subject="agent_version",
        of=lambda publish_request: publish_request.agent_version,
    )

    @admin.action(description="Request a bypass of the blocked decision", permissions=["bypass"])
    def request_bypass(self, request, queryset):
        form = BypassReasonForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            run_verb(
                self,
                request,
                queryset,
                lambda r: RequestBypass(
                    acting_user=request.user, publish_request=r, reason=form.cleaned_data["reason"]
                ),
                "bypass requested",
            )
            return None
        objects = list(queryset)
        for obj in objects:
            obj.first_failing = gate_label((obj.decision or {}).get("first_failing_gate"))
        return TemplateResponse(
            request,
            "admin/governance/bypass_reason.html",
            {
                **self.admin_site.each_context(request),
                "title": "Request a bypass",
                "form": form,
                "objects": objects,
                "action": "request_bypass",
                "opts": self.model._meta,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            },
        )


@admin.register(Bypass)
class BypassAdmin(AgentScopedReadOnlyAdmin):
    list_display = ["__str__", "publish_request", "requested_by", "approved_by", "expires_at"]
    list_filter = ["state"]
    list_select_related = ["publish_request__agent_version__agent", "requested_by", "approved_by"]
    actions = ["approve", "deny", "revoke"]

    def governed(self, obj):
        return obj.publish_request.agent_version.agent

    approve = verb_action(
        ApproveBypass,
        "approved",
        description="Approve (a second Admin)",
        permission="bypass",
        subject="bypass",
    )
    deny = verb_action(
        DenyBypass, "denied", description="Deny", permission="bypass", subject="bypass"
    )
    revoke = verb_action(
        RevokeBypass, "revoked", description="Revoke", permission="bypass", subject="bypass"
    )
