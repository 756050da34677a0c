"""Admin for agents: scoped to what the user may see and change, with governed fields (version
state, live version) read-only; they change only through the publishing actions, whose admin
actions governance adds (`governance.admin`, since agents may not import governance).

Django's admin never checks object permissions by itself: `has_change_permission(request,
obj)` asks `user.has_perm(codename)` without the object, so a role granted for one agent would
be invisible and a global role would reach every object. `sherlock.core.admin.ScopedAdminMixin`
answers both questions through `sherlock.core.permissions` (global OR object grant) instead.
"""

from django import forms
from django.contrib import admin

from agents.actions.create_agent import CreateAgent
from agents.actions.create_draft_version import CreateDraftVersion
from agents.actions.update_draft_version import UpdateDraftVersion
from agents.adapters import validate_config
from agents.models import Agent, AgentVersion, Tool
from agents.verifiers.spec import InvalidVerifier, VerifierRefused, validate_verifier_spec
from sherlock.core.admin import AuditedEdits, ReadOnlyInline, ScopedAdminMixin
from sherlock.core.audit import audit
from sherlock.core.egress import EgressRefused
from sherlock.core.errors import ActionRefused
from sherlock.core.permissions import user_can


class VersionInline(ReadOnlyInline):
    model = AgentVersion
    fields = ["number", "state", "adapter", "config_hash", "created_by", "created_at"]
    readonly_fields = fields


@admin.register(Agent)
class AgentAdmin(ScopedAdminMixin, AuditedEdits, admin.ModelAdmin):
    """Registering goes through `CreateAgent` (owner, audit); a change of the name, the
    description or the owner, and a delete, are audited with before and after
    (`AuditedEdits`: `agents.agent.update`, `agents.agent.delete`)."""

    list_display = ["slug", "name", "live_version", "owner", "created_at"]
    list_select_related = ["live_version", "owner"]
    search_fields = ["slug", "name"]
    readonly_fields = ["live_version", "created_at"]
    autocomplete_fields = ["owner"]  # a name typed and picked, not a bare id (issue 24)
    prepopulated_fields = {"slug": ["name"]}
    inlines = [VersionInline]

    def governed_queryset(self, request, action):
        return Agent.objects.for_user(request.user, action)

    def get_queryset(self, request):
        return Agent.objects.for_user(request.user, "view").select_related("live_version", "owner")

    def has_add_permission(self, request):
        return request.user.has_perm("agents.add_agent")

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        # "Add version" on the agent's page, for whoever may build it (issue 24).
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


class AgentVersionForm(forms.ModelForm):
    """The model's validation shows a bad config on its field; a config an operator's rule
    refuses (a secret or a host: `sherlock.core.egress`) is also audited, as the version
    actions audit it through the API (`agents.version.refused`): trying is evidence."""

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk and not {"adapter", "config"} & set(self.changed_data):
            return cleaned
        adapter = cleaned.get("adapter", self.instance.adapter)
        config = cleaned.get("config", self.instance.config)
        try:
            validate_config(adapter, config)
        except EgressRefused as exc:
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
            pass  # the model's clean() puts it on the field
        return cleaned


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
    autocomplete_fields = ["agent"]  # the agents one may see, by slug or name (issue 24)
    filter_horizontal = ["tools", "denied_tools"]
    form = AgentVersionForm

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.user = request.user
        return form

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

    def clean(self):
        cleaned = super().clean()
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
    """Tools are plain data shared by every agent's tool policy: each add, change and delete
    is audited with before and after (`agents.tool.create`, `.update`, `.delete`), and a
    verifier the egress rules refuse is audited too (`agents.tool.refused`, `ToolForm`)."""

    list_display = ["name", "effectful", "high_impact"]
    list_filter = ["effectful", "high_impact"]
    search_fields = ["name", "description"]
    form = ToolForm

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.user = request.user
        return form
