"""Admin for governance. Every change goes through a governance action: the publishing verbs
are admin actions on versions, requests and bypasses (and "Start a run…" on a version, through
`evaluations.admin.start_run`); policies are created and changed (a new
version each time) by the policy actions; webhook endpoints by the webhook actions (their
delivery log is read-only); roles are granted and revoked on a user's "Roles"
page; API keys are issued (the key shown once, in a message) and revoked by the API key
actions. Requests, decisions, bypasses and the audit log are otherwise read-only.

Rights cannot be edited behind the actions' back: the user page shows groups, permissions and
the superuser flag read-only, the group page is read-only, and django-guardian's object
permission screens (`GuardedModelAdmin`) are not mounted, since they let any staff user who
may change a model grant themselves rights on it (django-guardian #756). The user page's
`is_active` and `is_staff` stay editable (access, not rights) and are audited with the acting
Admin (`governance.receivers`); only a superuser may set the password of an account that holds
Admin rights, so the second Admin of a bypass cannot be a colleague whose password another
Admin just reset.
"""

import io

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin, sensitive_post_parameters_m
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from rest_framework_api_key.models import APIKey as LibraryAPIKey

from agents.admin import AgentVersionAdmin as BaseAgentVersionAdmin
from agents.models import Agent, AgentVersion
from evaluations.admin.start_run import StartRunPermission, start_run_action
from evaluations.models import Dataset
from governance.actions._policy import POLICY_FIELDS
from governance.actions.approve_bypass import ApproveBypass
from governance.actions.change_policy import ChangePolicy
from governance.actions.change_webhook import ChangeWebhook
from governance.actions.create_api_key import CreateAPIKey
from governance.actions.create_policy import CreatePolicy
from governance.actions.create_webhook import CreateWebhook
from governance.actions.delete_webhook import DeleteWebhook
from governance.actions.deny_bypass import DenyBypass
from governance.actions.grant_role import GrantRole
from governance.actions.publish_version import PublishVersion
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.actions.retire_version import RetireVersion
from governance.actions.revoke_api_key import RevokeAPIKey
from governance.actions.revoke_bypass import RevokeBypass
from governance.actions.revoke_role import RevokeRole
from governance.actions.rollback_version import RollBackVersion
from governance.audit_export import write_entries
from governance.choices import Role, WebhookEvent
from governance.models import (
    APIKey,
    AuditEntry,
    Bypass,
    PublishingPolicy,
    PublishRequest,
    RoleGrant,
    WebhookDelivery,
    WebhookEndpoint,
)
from governance.roles import holds_admin_rights, is_global_admin, role_grants
from sherlock.core.admin import ReadOnlyMixin, ScopedAdminMixin, run_verb, verb_action
from sherlock.core.audit import audit
from sherlock.core.errors import ActionError, ActionRefused


class ReadOnlyAdmin(ReadOnlyMixin, admin.ModelAdmin):
    pass


class VerbPermissions:
    """`has_<verb>_permission(request)`: the user holds the verb on at least one agent. Admin
    actions declare them, so a button is shown only to those who could use it somewhere; the
    action still decides, object by object, and audits a refusal."""

    def _holds_somewhere(self, request, verb):
        return Agent.objects.for_user(request.user, verb).exists()

    def has_build_permission(self, request):
        return self._holds_somewhere(request, "build") or self._holds_somewhere(request, "publish")

    def has_publish_permission(self, request):
        return self._holds_somewhere(request, "publish")

    def has_bypass_permission(self, request):
        return self._holds_somewhere(request, "bypass")


class AgentScopedReadOnlyAdmin(VerbPermissions, ScopedAdminMixin, ReadOnlyAdmin):
    """Rows that belong to an agent, seen by whoever may see the agent; changed only by
    actions."""

    scope_actions = {"view": "view", "change": None, "delete": None}

    def governed_queryset(self, request, action):
        return Agent.objects.for_user(request.user, action)

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .filter(pk__in=self.model.objects.for_user(request.user, "view").values("pk"))
        )

    def has_add_permission(self, request):
        return False


# --- Versions: the publishing verbs ---------------------------------------------------------

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


class ActionForm(forms.ModelForm):
    """A form whose row is written by an action (`make_action(user)`, set by the subclass):
    `clean` asks the action's `check()`, so a refusal is shown on its field (or the form)
    instead of failing inside the admin's transaction, and the form never touches the
    instance itself."""

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        action = self.make_action(self.user)
        try:
            action.check()
        except ActionError as exc:
            if isinstance(exc, ActionRefused):  # audited as `execute()` would: it is evidence
                action.audit_refusal(exc)
            field = getattr(exc, "field", None)
            self.add_error(field if field in self.fields else None, str(exc))
        return cleaned

    def _post_clean(self):
        # The action writes the row (an API key with its hash, a policy's next version) and
        # runs the model's validation on it; the form validating the old row would refuse a
        # policy's next version as a duplicate of its scope.
        pass


class ActionFormAdmin:
    """The admin side of an `ActionForm`: the form knows who acts, and rows are never deleted
    in bulk (each goes through its action)."""

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.user = request.user
        return form

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions


# --- Policies -------------------------------------------------------------------------------


class PolicyForm(ActionForm):
    """The policy actions write the next version (or version 1 of a new scope); a refusal is
    shown on its field, or above the form when it names none ("Nothing changed.")."""

    class Meta:
        model = PublishingPolicy
        fields = ["agent", *POLICY_FIELDS, "gate_datasets"]

    def make_action(self, user):
        fields = {
            name: self.cleaned_data[name] for name in POLICY_FIELDS if name in self.cleaned_data
        }
        datasets = list(self.cleaned_data.get("gate_datasets") or [])
        if self.instance.pk is None:
            return CreatePolicy(
                acting_user=user,
                agent=self.cleaned_data.get("agent"),
                gate_datasets=datasets,
                **fields,
            )
        original = PublishingPolicy.objects.get(pk=self.instance.pk)
        return ChangePolicy(
            acting_user=user, policy=original, changes=fields, gate_datasets=datasets
        )


@admin.register(PublishingPolicy)
class PublishingPolicyAdmin(admin.ModelAdmin):
    """Saving writes version 1 (new scope) or the next version (an existing one) through the
    policy actions; older versions are shown read-only, as the decisions that used them."""

    form = PolicyForm
    list_display = ["name", "scope_key", "version", "enforcement", "min_case_pass_rate"]
    list_filter = ["enforcement", "scope_key"]
    readonly_fields = ["scope_key", "version", "created_by", "created_at"]
    filter_horizontal = ["gate_datasets"]
    raw_id_fields = ["agent"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.user = request.user
        return form

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "agent"] if obj is not None else self.readonly_fields

    def has_add_permission(self, request):
        return is_global_admin(request.user)

    def has_change_permission(self, request, obj=None):
        if not is_global_admin(request.user):
            return False
        return obj is None or PublishingPolicy.objects.current(obj.scope_key).pk == obj.pk

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        saved = form.make_action(request.user).execute()
        obj.pk, obj.version, obj.scope_key = saved.pk, saved.version, saved.scope_key

    def save_related(self, request, form, formsets, change):
        """The action already set the gate datasets on the row it wrote."""


# --- Publish requests and bypasses -----------------------------------------------------------


class BypassReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        help_text="Why this gate must be bypassed: at least 30 characters of real explanation.",
        required=False,
    )


class BypassInline(admin.TabularInline):
    model = Bypass
    fields = ["state", "requested_by", "approved_by", "reason", "expires_at", "used_at"]
    readonly_fields = fields
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
        return TemplateResponse(
            request,
            "admin/governance/bypass_reason.html",
            {
                **self.admin_site.each_context(request),
                "title": "Request a bypass",
                "form": form,
                "objects": queryset,
                "action": "request_bypass",
                "opts": self.model._meta,
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
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


# --- The audit log ---------------------------------------------------------------------------


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


# --- Users, groups and roles -----------------------------------------------------------------


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
    agent = forms.ModelChoiceField(
        Agent.objects.all(), required=False, to_field_name="slug", help_text="Only this agent."
    )
    dataset = forms.ModelChoiceField(
        Dataset.objects.all(), required=False, to_field_name="slug", help_text="Only this dataset."
    )
    reason = forms.CharField(required=False)

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("agent") and cleaned.get("dataset"):
            raise forms.ValidationError("Choose an agent or a dataset, not both.")
        return cleaned

    @property
    def scope(self):
        return self.cleaned_data.get("agent") or self.cleaned_data.get("dataset")


User = get_user_model()
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class SherlockUserAdmin(UserAdmin):
    """Django's user admin with rights read-only; roles change on the user's Roles page."""

    readonly_fields = ["is_superuser", "groups", "user_permissions", "roles", "last_login"]

    @sensitive_post_parameters_m
    def user_change_password(self, request, id, form_url=""):
        """The admin's "set password" page, which asks no old password: closed (403) to a
        non-superuser for an account with Admin rights (`holds_admin_rights`). Every password
        change, here or anywhere, is audited as `auth.user.password_change`."""
        target = self.get_object(request, unquote(id))
        if target is not None and not request.user.is_superuser and holds_admin_rights(target):
            raise PermissionDenied
        return super().user_change_password(request, id, form_url)

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return super().get_fieldsets(request, obj)
        return [
            (None, {"fields": ["username", "password"]}),
            ("Personal info", {"fields": ["first_name", "last_name", "email"]}),
            (
                "Rights (granted on the Roles page)",
                {"fields": ["is_active", "is_staff", "is_superuser", "roles"]},
            ),
            ("Important dates", {"fields": ["last_login", "date_joined"]}),
        ]

    @admin.display(description="roles")
    def roles(self, obj):
        url = reverse("admin:auth_user_roles", args=[obj.pk])
        return format_html('{} <a href="{}">Manage roles</a>', describe_roles(obj) or "none", url)

    def get_urls(self):
        return [
            path(
                "<int:user_id>/roles/",
                self.admin_site.admin_view(self.roles_view),
                name="auth_user_roles",
            ),
            *super().get_urls(),
        ]

    def roles_view(self, request, user_id):
        if not is_global_admin(request.user):
            raise PermissionDenied
        target = get_object_or_404(User, pk=user_id)
        form = RoleForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            verb = GrantRole if "grant" in request.POST else RevokeRole
            try:
                verb(
                    acting_user=request.user,
                    user=target,
                    role=form.cleaned_data["role"],
                    obj=form.scope,
                    reason=form.cleaned_data["reason"],
                ).execute()
            except ActionError as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, "Roles changed.", messages.SUCCESS)
            return redirect("admin:auth_user_roles", user_id)
        return TemplateResponse(
            request,
            "admin/governance/user_roles.html",
            {
                **self.admin_site.each_context(request),
                "title": f"Roles of {target}",
                "target": target,
                "roles": describe_roles(target),
                "grants": sorted(
                    RoleGrant.objects.filter(user=target).select_related(
                        "agent", "dataset", "granted_by"
                    ),
                    key=lambda g: (g.scope != "global", g.scope, str(g.obj or ""), g.role),
                ),
                "form": form,
                "opts": User._meta,
            },
        )


def describe_roles(user):
    """ "Publisher (global), Builder (agent support-bot)" for the user page: the user's grants
    (`RoleGrant`), never roles inferred from the permissions they hold."""
    parts = []
    for grant in role_grants(user):
        where = grant["scope"]
        if where != "global":
            where = f"{where} {grant[where]}"
        parts.append(f"{grant['role']} ({where})")
    return ", ".join(parts)


@admin.register(RoleGrant)
class RoleGrantAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Every role grant, for global Admins to read: who holds what where, granted by whom, when
    and why. Grants change on a user's Roles page (`GrantRole`, `RevokeRole`), never here, so
    no Admin can edit a grant's date or author (the second-Admin rule reads the audit log)."""

    list_display = ["user", "role", "scope", "agent", "dataset", "granted_by", "granted_at"]
    list_filter = ["role", "scope"]
    search_fields = ["user__username", "agent__slug", "dataset__slug"]
    list_select_related = ["user", "agent", "dataset", "granted_by"]

    def has_module_permission(self, request):
        return is_global_admin(request.user)

    def has_view_permission(self, request, obj=None):
        return is_global_admin(request.user)


@admin.register(Group)
class ReadOnlyGroupAdmin(GroupAdmin):
    """The four role groups are defined in code (governance.roles, migration 0002)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# --- Webhooks ---------------------------------------------------------------------------------


class WebhookForm(ActionForm):
    """Asks the webhook action whether it would accept the change, so a refusal is shown on the
    form; saving runs that action (governance.actions.create_webhook / change_webhook)."""

    url = forms.URLField(max_length=500, assume_scheme="https")
    events = forms.MultipleChoiceField(
        choices=WebhookEvent.choices, widget=forms.CheckboxSelectMultiple
    )
    rotate_secret = forms.BooleanField(
        required=False, help_text="Draw a new secret (receivers must be given the new one)."
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["url", "events", "active"]

    def make_action(self, user):
        changes = {name: self.cleaned_data.get(name) for name in ("url", "events", "active")}
        if self.instance.pk is None:
            return CreateWebhook(acting_user=user, **changes)
        return ChangeWebhook(
            acting_user=user,
            endpoint=WebhookEndpoint.objects.get(pk=self.instance.pk),
            changes=changes,
            rotate_secret=self.cleaned_data.get("rotate_secret", False),
        )


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ActionFormAdmin, admin.ModelAdmin):
    """Endpoints are created, changed and deleted by the webhook actions (Admins only, audited).
    The secret is shown read-only to the Admin, to configure the receiver with."""

    form = WebhookForm
    list_display = ["url", "events", "active", "created_by", "updated_at"]
    list_filter = ["active"]
    readonly_fields = ["secret", "created_by", "created_at", "updated_at"]
    actions = ["delete_endpoints"]

    def get_fields(self, request, obj=None):
        fields = ["url", "events", "active"]
        return [*fields, "rotate_secret", *self.readonly_fields] if obj else fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["fields"] = ["url", "events", "active", *(["rotate_secret"] if obj else [])]
        return super().get_form(request, obj, change=change, **kwargs)

    def has_module_permission(self, request):
        return is_global_admin(request.user)

    def has_view_permission(self, request, obj=None):
        return is_global_admin(request.user)

    has_add_permission = has_module_permission

    def has_change_permission(self, request, obj=None):
        return is_global_admin(request.user)

    def has_delete_permission(self, request, obj=None):
        return is_global_admin(request.user)

    def save_model(self, request, obj, form, change):
        saved = form.make_action(request.user).execute()
        obj.pk, obj.url, obj.events, obj.active = saved.pk, saved.url, saved.events, saved.active

    def delete_model(self, request, obj):
        DeleteWebhook(acting_user=request.user, endpoint=obj).execute()

    @admin.action(description="Delete the selected endpoints", permissions=["delete"])
    def delete_endpoints(self, request, queryset):
        run_verb(
            self,
            request,
            queryset,
            lambda endpoint: DeleteWebhook(acting_user=request.user, endpoint=endpoint),
            "deleted",
        )


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    """Every attempt of every delivery, with the receiver's answer: read-only."""

    list_display = [
        "started_at",
        "event",
        "attempt",
        "status_code",
        "delivered",
        "url",
        "error",
    ]
    list_filter = ["event", "delivered"]
    search_fields = ["delivery_id", "url"]
    list_select_related = ["endpoint"]

    def has_module_permission(self, request):
        return is_global_admin(request.user)

    def has_view_permission(self, request, obj=None):
        return is_global_admin(request.user)


# --- API keys ---------------------------------------------------------------------------------

# The library's own key model is not used (Sherlock's keys belong to a user): no screen for it.
admin.site.unregister(LibraryAPIKey)


class APIKeyForm(ActionForm):
    """Issue a key: the owner (an Admin chooses; anyone else issues to themselves), a name and
    the days it lives. Asks `CreateAPIKey` whether it would accept, so a refusal is shown on
    its field; saving runs it."""

    days = forms.IntegerField(
        min_value=1,
        required=False,
        help_text="Days until the key expires (default SHERLOCK_API_KEY_DAYS, at most "
        "SHERLOCK_API_KEY_MAX_DAYS).",
    )

    class Meta:
        model = APIKey
        fields = ["user", "name"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["days"].initial = settings.SHERLOCK_API_KEY_DAYS

    def make_action(self, user):
        return CreateAPIKey(
            acting_user=user,
            user=self.cleaned_data.get("user") or user,
            name=self.cleaned_data.get("name", ""),
            days=self.cleaned_data.get("days"),
            reason="admin",
        )


@admin.register(APIKey)
class APIKeyAdmin(ActionFormAdmin, admin.ModelAdmin):
    """Issue and revoke API keys. A global Admin sees and revokes everyone's keys and issues
    them to anyone; another staff user sees only their own and issues keys to themselves. The
    key is shown once, in the message after saving: only its hash is stored."""

    form = APIKeyForm
    list_display = ["name", "prefix", "user", "state", "expiry_date", "last_used_at"]
    list_filter = ["revoked"]
    list_select_related = ["user"]
    search_fields = ["name", "prefix", "user__username"]
    raw_id_fields = ["user"]
    actions = ["revoke_keys"]
    readonly_fields = [
        "prefix",
        "user",
        "name",
        "state",
        "created",
        "expiry_date",
        "last_used_at",
        "issued_by",
        "revoked_at",
        "revoked_by",
    ]

    @admin.display(description="state")
    def state(self, obj):
        return obj.state

    def get_queryset(self, request):
        keys = super().get_queryset(request)
        return keys if is_global_admin(request.user) else keys.filter(user=request.user)

    def get_fields(self, request, obj=None):
        if obj is not None:
            return self.readonly_fields
        return ["user", "name", "days"] if is_global_admin(request.user) else ["name", "days"]

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else []

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["fields"] = [f for f in self.get_fields(request) if f != "days"]
        return super().get_form(request, obj, change=change, **kwargs)

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None):
        # A row outside get_queryset (another user's key) is answered 404 by the admin itself.
        return self.has_module_permission(request)

    def has_add_permission(self, request):
        return self.has_module_permission(request)

    def has_change_permission(self, request, obj=None):
        return False  # a key is never edited: issued, then revoked

    def has_delete_permission(self, request, obj=None):
        return False  # revoked, not deleted: the row is the record of the key

    def has_revoke_permission(self, request):
        return self.has_module_permission(request)

    def save_model(self, request, obj, form, change):
        api_key, secret = form.make_action(request.user).execute()
        obj.pk, obj.name, obj.prefix = api_key.pk, api_key.name, api_key.prefix
        self.message_user(
            request,
            format_html(
                "The API key of {} is <code>{}</code> (expires {}). Copy it now: it is stored "
                "hashed and cannot be shown again. Send it as <code>Authorization: Token "
                "&lt;key&gt;</code>.",
                api_key.user,
                secret,
                f"{api_key.expiry_date:%Y-%m-%d}",
            ),
            messages.WARNING,
        )

    def save_related(self, request, form, formsets, change):
        """Nothing else to save: the action wrote the row."""

    @admin.action(description="Revoke the selected keys", permissions=["revoke"])
    def revoke_keys(self, request, queryset):
        run_verb(
            self,
            request,
            queryset.select_related("user"),
            lambda api_key: RevokeAPIKey(acting_user=request.user, api_key=api_key, reason="admin"),
            "revoked",
        )
