"""What the governance admin pages share: read-only pages, the publishing verbs' permissions,
pages scoped to the agents a user may see, and `ActionForm`, a model form that saves through
its action and shows a refusal on its field."""

from typing import Any

from django import forms
from django.contrib import admin

from agents.models import Agent
from sherlock.core.admin import ReadOnlyMixin, ScopedAdminMixin, any_visible
from sherlock.core.errors import ActionError, ActionRefused, refusal_in
from sherlock.core.forms import show_refusal, with_acting_user


class ReadOnlyAdmin(ReadOnlyMixin, admin.ModelAdmin):
    pass


class VerbPermissions:
    """`has_<verb>_permission(request)`: the user holds the verb on at least one agent. Admin
    actions declare them, so a button is shown only to those who could use it somewhere; the
    action still decides, object by object, and audits a refusal."""

    def _holds_somewhere(self, request, verb):
        return any_visible(request, Agent, verb)

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

    def has_add_permission(self, request, obj=None):
        return False


class ActionForm(forms.ModelForm):
    """A form whose row is written by an action (`make_action(user)`, set by the subclass):
    `clean` asks the action's `check()`, so a refusal is shown on its field (or the form)
    instead of failing inside the admin's transaction, and the form never touches the
    instance itself. Every error comes at once: each of the action's on its field,
    and, when `make_action` takes a partly cleaned form (`checks_partial`: it reads the fields
    with defaults), the action's errors on the fields that passed beside the fields' own."""

    checks_partial = False
    user: Any  # who acts, set by the admin's get_form

    def make_action(self, user):
        raise NotImplementedError  # each form says which action writes its row

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        failed = bool(self.errors)
        if failed and not self.checks_partial:
            return cleaned
        action = self.make_action(self.user)
        try:
            action.check()
        except ActionError as exc:
            refusal = refusal_in(exc)
            if isinstance(refusal, ActionRefused):  # audited as `execute()` would: evidence
                action.audit_refusal(refusal)
            # A field already wrong says so once; a refusal of the whole form waits until the
            # fields are right (it may come from a field left out).
            show_refusal(self, exc, skip={*self.errors, *([None] if failed else [])})
        return cleaned

    def _post_clean(self):
        # The action writes the row (an API key with its hash, a policy's next version) and
        # runs the model's validation on it; the form validating the old row would refuse a
        # policy's next version as a duplicate of its scope.
        pass


class ActionFormAdmin(admin.ModelAdmin):
    """The admin side of an `ActionForm`: the form knows who acts, and rows are never deleted
    in bulk (each goes through its action)."""

    def get_form(self, request, obj=None, change=False, **kwargs):
        return with_acting_user(
            super().get_form(request, obj, change=change, **kwargs), request.user
        )

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions
