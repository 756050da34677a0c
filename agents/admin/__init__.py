"""Admin for agents: scoped to what the user may see and change, with governed fields (version
state, live version) read-only; they change only through the publishing actions, whose admin
actions governance adds (`governance.admin`, since agents may not import governance).

Django's admin never checks object permissions by itself: `has_change_permission(request,
obj)` asks `user.has_perm(codename)` without the object, so a role granted for one agent would
be invisible and a global role would reach every object. `sherlock.core.admin.ScopedAdminMixin`
answers both questions through `sherlock.core.permissions` (global OR object grant) instead.
"""

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Q
from django.urls import reverse
from django.utils.html import format_html

from agents.actions.create_agent import CreateAgent
from agents.actions.create_draft_version import CreateDraftVersion
from agents.actions.update_draft_version import UpdateDraftVersion
from agents.adapters import ADAPTERS, config_errors, scalar_settings, validate_config
from agents.models import Agent, AgentVersion, Tool
from agents.verifiers.spec import InvalidVerifier, VerifierRefused, validate_verifier_spec
from sherlock.core.admin import (
    AuditedEdits,
    ReadOnlyInline,
    ScopedAdminMixin,
    any_visible,
    global_admin,
)
from sherlock.core.audit import audit
from sherlock.core.egress import EgressRefused
from sherlock.core.errors import ActionRefused
from sherlock.core.forms import with_acting_user
from sherlock.core.permissions import is_global_admin, user_can


class VersionInline(ReadOnlyInline):
    model = AgentVersion
    fields = readonly_fields = (
        "number",
        "state",
        "adapter",
        "config_hash",
        "created_by",
        "created_at",
    )


@admin.register(Agent)
class AgentAdmin(ScopedAdminMixin, AuditedEdits, admin.ModelAdmin):
    """Registering goes through `CreateAgent` (owner, audit); a change of the name, the
    description or the owner, and a delete, are audited with before and after
    (`AuditedEdits`: `agents.agent.update`, `agents.agent.delete`)."""

    list_display = ["slug", "name", "live_version", "owner", "created_at"]
    list_select_related = ["live_version", "owner"]
    search_fields = ["slug", "name"]
    readonly_fields = ["live_version", "created_at"]
    autocomplete_fields = ["owner"]  # a name typed and picked, not a bare id
    prepopulated_fields = {"slug": ["name"]}
    inlines = [VersionInline]

    def governed_queryset(self, request, action):
        return Agent.objects.for_user(request.user, action)

    def get_queryset(self, request):
        return Agent.objects.for_user(request.user, "view").select_related("live_version", "owner")

    def has_add_permission(self, request):
        return request.user.has_perm("agents.add_agent")

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        # "Add version" on the agent's page, for whoever may build it.
        context["may_add_version"] = obj is not None and user_can(request.user, "build", obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        agent = CreateAgent(
            acting_user=request.user, slug=obj.slug, name=obj.name, description=obj.description
        ).execute()
        obj.pk, obj.owner_id, obj.created_at = agent.pk, agent.owner_id, agent.created_at


def setting_field_name(adapter, name):
    """The form field of one adapter setting: `http__url`."""
    return f"{adapter}__{name}"


def _setting_field(name, spec, required):
    """A form field for one scalar setting of an adapter's SCHEMA: its description as help,
    its bounds where a form field has them; the schema still decides (`config_errors`)."""
    common = {
        "required": False,  # required only for its adapter: the schema says so, on this field
        "label": f"{name}{' (required)' if required else ''}",
        "help_text": spec.get("description", ""),
    }
    if "enum" in spec:
        choices = [("", "—"), *((value, value) for value in spec["enum"])]
        return forms.ChoiceField(choices=choices, **common)
    bounds = {"min_value": spec.get("minimum"), "max_value": spec.get("maximum")}
    if spec.get("type") == "integer":
        return forms.IntegerField(**bounds, **common)
    if spec.get("type") == "number":
        return forms.FloatField(**bounds, **common)
    if spec.get("type") == "boolean":
        return forms.NullBooleanField(**common)
    if name.endswith("prompt"):
        return forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), strip=False, **common)
    return forms.CharField(widget=forms.TextInput(attrs={"size": 60}), **common)


SETTING_FIELDS = {
    setting_field_name(adapter, name): _setting_field(name, spec, required)
    for adapter in ADAPTERS
    for name, spec, required in scalar_settings(adapter)
}


class AgentVersionFormBase(forms.ModelForm):
    """The config edited per adapter: each scalar setting of the chosen adapter's
    SCHEMA is a field of its own, described, with its errors on it; objects and lists (a
    python agent's kwargs, headers, tools, an api_key secret) stay in the JSON box, "Advanced
    settings", which also takes any setting as JSON. Every error of the config is shown at once
    (`config_errors`), each on its field. A config an operator's rule refuses (a secret or a
    host: `sherlock.core.egress`) is also audited, as the version actions audit it through the
    API (`agents.version.refused`): trying is evidence."""

    user: Any  # who acts, set by the admin's get_form

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._config_reported = False
        if "config" not in self.fields:
            return  # a frozen version: its config is shown read-only
        adapter, config = self.instance.adapter, self.instance.config or {}
        if self.instance.pk and adapter in ADAPTERS and isinstance(config, dict):
            scalars = {name for name, _, _ in scalar_settings(adapter)}
            for name in scalars & set(config):
                self.initial[setting_field_name(adapter, name)] = config[name]
            self.initial["config"] = {k: v for k, v in config.items() if k not in scalars}
        self.fields["config"].required = False
        self.fields["config"].help_text = (
            "Settings without a field above, as a JSON object (a python agent's kwargs, "
            "headers, tools, an api_key secret), or any setting: a field above wins."
        )

    def merged_config(self, adapter):
        """The JSON box's object with the adapter's fields set over it; None when the box is not
        an object (the model's validation says so on the box)."""
        raw = self.cleaned_data.get("config")
        raw = {} if raw in (None, "") else raw
        if not isinstance(raw, dict):
            return None
        config = dict(raw)
        for name, _, _ in scalar_settings(adapter):
            value = self.cleaned_data.get(setting_field_name(adapter, name))
            if value not in (None, ""):
                config[name] = value
        return config

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        if "config" not in self.fields or "config" in self.errors:
            return cleaned
        adapter = cleaned.get("adapter", self.instance.adapter)
        if adapter not in ADAPTERS:
            return cleaned
        config = self.merged_config(adapter)
        if config is None:
            return cleaned
        cleaned["config"] = config
        if (
            self.instance.pk
            and config == self.instance.config
            and (adapter == self.instance.adapter)
        ):
            return cleaned
        self._report(adapter, config)
        try:
            validate_config(adapter, config)
        except EgressRefused as exc:
            action: UpdateDraftVersion | CreateDraftVersion
            if self.instance.pk:
                action = UpdateDraftVersion(acting_user=self.user, version=self.instance)
            else:
                action = CreateDraftVersion(
                    acting_user=self.user,
                    agent=cleaned.get("agent"),
                    adapter=adapter,
                    config=config,
                )
            action.audit_refusal(ActionRefused(str(exc), field="config"))
        except ValueError:
            pass  # reported on its field above
        return cleaned

    def _report(self, adapter, config):
        """Each error of `config` on the field of the setting it names, else on the JSON box."""
        for message in config_errors(adapter, config):
            where, _, problem = message.partition(": ")
            parts = where.split(".")
            field = setting_field_name(adapter, parts[1]) if len(parts) == 2 else ""
            if field in self.fields:
                self.add_error(field, problem)
            else:
                self.add_error("config", message)
            self._config_reported = True

    def _update_errors(self, errors):
        # The model's clean() validates the config again: once reported field by field above,
        # its first error on the JSON box would say the same twice.
        if self._config_reported and hasattr(errors, "error_dict"):
            errors.error_dict.pop("config", None)
            if not errors.error_dict:
                return
        super()._update_errors(errors)  # type: ignore[misc]  # Django's, absent from its stubs


AgentVersionForm = type(
    "AgentVersionForm",
    (AgentVersionFormBase,),
    {**SETTING_FIELDS, "__module__": __name__, "__doc__": AgentVersionFormBase.__doc__},
)


@admin.register(AgentVersion)
class AgentVersionAdmin(ScopedAdminMixin, admin.ModelAdmin):
    """Versions are scoped by their agent: seeing one needs `view` on the agent, changing a
    draft's notes or config needs `build` on it, and versions are never deleted (their runs and
    decisions point at them)."""

    scope_actions = {"view": "view", "change": "build", "delete": None}
    list_display = ["__str__", "state", "adapter", "created_by", "created_at"]
    list_filter = ["state", "adapter"]
    list_select_related = ["agent", "created_by"]
    search_fields = ["agent__slug", "notes"]
    readonly_fields = ["number", "state", "config_hash", "created_by", "created_at"]
    # Typed and picked, never listed whole: the agents one may see, by slug or name;
    # the tools by name or description.
    autocomplete_fields = ["agent", "tools", "denied_tools"]
    form = AgentVersionForm

    class Media:
        js = ["agents/adapter_form.js"]  # shows the chosen adapter's settings only

    def get_fieldsets(self, request, obj=None):
        """The version's fields, then the config: the chosen adapter's settings, each a field
        with its description and a link to the adapter's section of docs/adapters.md, and the
        JSON box for the rest. A frozen version shows its config as it is, read-only."""
        head = ["agent", "adapter"] if obj is None else ["agent", "number", "state", "adapter"]
        tail = ["notes", "tools", "denied_tools"]
        if obj is not None:
            tail += ["config_hash", "created_by", "created_at"]
        if obj is not None and (obj.is_frozen or not self.has_change_permission(request, obj)):
            return [(None, {"fields": [*head, "config", *tail]})]
        docs = reverse("admin:evaluations_check_docs", args=["adapters"])
        settings = [
            (
                f"Settings of the {adapter} adapter",
                {
                    "fields": [setting_field_name(adapter, name) for name, _, _ in fields],
                    "classes": ["adapter-settings", f"adapter-{adapter}"],
                    "description": format_html(
                        'What each setting does: <a href="{}#{}" target="_blank">'
                        'docs/adapters.md, "{}"</a>.',
                        docs,
                        adapter,
                        adapter,
                    ),
                },
            )
            for adapter in ADAPTERS
            if (fields := scalar_settings(adapter))
        ]
        advanced = ("Advanced settings (JSON)", {"fields": ["config"]})
        return [(None, {"fields": head}), *settings, advanced, (None, {"fields": tail})]

    def get_form(self, request, obj=None, change=False, **kwargs):
        return with_acting_user(
            super().get_form(request, obj, change=change, **kwargs), request.user
        )

    def governed(self, obj):
        return obj.agent

    def governed_queryset(self, request, action):
        return Agent.objects.for_user(request.user, action)

    def get_queryset(self, request):
        return AgentVersion.objects.for_user(request.user, "view").select_related(
            "agent", "created_by"
        )

    def has_add_permission(self, request):
        return self._may(request, "change", None)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "agent":  # a draft may only be added to an agent one builds
            kwargs["queryset"] = Agent.objects.for_user(request.user, "build")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        fields = list(self.readonly_fields)
        if obj is not None:
            fields.append("agent")
            if obj.is_frozen:
                fields += ["adapter", "config", "tools", "denied_tools"]
        return fields

    def save_model(self, request, obj, form, change):
        # Both paths go through the actions, so a tool policy set here is checked and audited
        # as it is through the API (a plain many-to-many save would be neither).
        if change:
            changes = {
                name: form.cleaned_data[name]
                for name in ("adapter", "config", "notes", "tools", "denied_tools")
                if name in form.cleaned_data
            }
            UpdateDraftVersion(
                acting_user=request.user, version=AgentVersion.objects.get(pk=obj.pk), **changes
            ).execute()
            return
        version = CreateDraftVersion(
            acting_user=request.user,
            agent=obj.agent,
            adapter=obj.adapter,
            config=obj.config,
            notes=obj.notes,
            tools=form.cleaned_data.get("tools", ()),
            denied_tools=form.cleaned_data.get("denied_tools", ()),
        ).execute()
        obj.pk, obj.number, obj.created_by = version.pk, version.number, version.created_by

    def save_related(self, request, form, formsets, change):
        # The tools were set by the action in save_model; the form must not set them again.
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)


class ToolForm(forms.ModelForm):
    """The model's `clean` shows a bad verifier on its field; a verifier an operator's egress
    rule refuses (a variable or a host: `VerifierRefused`) is also audited
    (`agents.tool.refused`), as an agent version's refusal is: trying is evidence. The entry
    is written in the admin's transaction, which commits: the form is only shown again."""

    user: Any  # who acts, set by the admin's get_form

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        if not cleaned.get("agent") and not is_global_admin(self.user):
            self.add_error(
                "agent",
                "Choose the agent whose tool this is: only an Admin shares a tool with every "
                "agent.",
            )
        verifier = cleaned.get("verifier")
        if self.instance.pk and "verifier" not in self.changed_data:
            return cleaned
        if isinstance(verifier, dict) and verifier:
            try:
                validate_verifier_spec(verifier)
            except VerifierRefused as exc:
                audit(
                    "agents.tool.refused",
                    actor=self.user,
                    target=self.instance if self.instance.pk else None,
                    after={"verb": "update" if self.instance.pk else "create"}
                    | {"code": ActionRefused.code, "name": cleaned.get("name")},
                    reason=f"verifier: {exc}",
                )
            except InvalidVerifier:
                pass  # the model's clean() puts it on the field
        return cleaned


@admin.register(Tool)
class ToolAdmin(AuditedEdits, admin.ModelAdmin):
    """Tools belong to agents: a Builder of an agent registers, changes and deletes that agent's
    tools; a global Admin also shares tools with every agent (no agent). An agent's own tool of
    a name wins over a shared one. Each add, change and delete is audited with before and after
    (`agents.tool.create`, `.update`, `.delete`), and a verifier the egress rules refuse is
    audited too (`agents.tool.refused`, `ToolForm`). `?agent=<id>&name=<tool>` fills the add
    form: the run and publish pages link there for an effect whose tool is not registered."""

    list_display = ["name", "owner", "effectful", "high_impact"]
    list_filter = ["effectful", "high_impact"]
    list_select_related = ["agent"]
    search_fields = ["name", "description", "agent__slug"]
    autocomplete_fields = ["agent"]
    form = ToolForm

    @admin.display(description="whose", ordering="agent__slug")
    def owner(self, obj):
        return obj.owner_text

    def get_queryset(self, request):
        """The shared tools and those of the agents one may see."""
        rows = super().get_queryset(request).select_related("agent")
        if global_admin(request):
            return rows
        seen = Agent.objects.for_user(request.user)
        return rows.filter(Q(agent__isnull=True) | Q(agent__in=seen))

    def has_view_permission(self, request, obj=None):
        """Whoever may build an agent sees the tools a version of it may list: a Builder of one
        agent picks its tools from the version form's autocomplete, which asks this."""
        return super().has_view_permission(request, obj) or any_visible(request, Agent, "build")

    def has_module_permission(self, request):
        return self.has_view_permission(request)  # a Builder of one agent finds its tools

    def has_add_permission(self, request):
        return global_admin(request) or any_visible(request, Agent, "build")

    def has_change_permission(self, request, obj=None):
        if obj is None:
            return self.has_add_permission(request)
        if obj.agent_id is None:
            return global_admin(request)  # a shared tool is an Admin's
        return user_can(request.user, "build", obj.agent)

    def has_delete_permission(self, request, obj=None):
        return self.has_change_permission(request, obj)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "agent":  # a tool is registered for an agent one builds
            kwargs["queryset"] = Agent.objects.for_user(request.user, "build")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_form(self, request, obj=None, change=False, **kwargs):
        return with_acting_user(
            super().get_form(request, obj, change=change, **kwargs), request.user
        )
