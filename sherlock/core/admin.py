"""Admin building blocks shared by the apps: scoping by role grant, read-only screens, and
admin actions that run a domain action on each selected row.

Django's admin never checks object permissions by itself: `has_change_permission(request,
obj)` asks `user.has_perm(codename)` without the object, so a role granted for one agent would
be invisible and a global role would reach every object. `ScopedAdminMixin` answers both
questions through `sherlock.core.permissions` (global OR object grant) instead.
"""

from django.contrib import admin, messages

from sherlock.core.errors import ActionError
from sherlock.core.hidden import audit_hidden
from sherlock.core.permissions import user_can


class AuditsHiddenObjects:
    """A verb on an object the user may not see is audited (`sherlock.core.hidden`). The admin
    answers such an object with a redirect ("doesn't exist. Perhaps it was deleted?"), not a
    404, so the middleware never sees it: the lookup itself records the attempt, when the
    request is a POST (a change or a delete)."""

    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            match = request.resolver_match
            verb = match.url_name.rsplit("_", 1)[-1] if match and match.url_name else "change"
            field = from_field or "pk"
            audit_hidden(request, self.model, {field: object_id}, verb=verb)
        return obj


class ScopedAdminMixin(AuditsHiddenObjects):
    """Changelists start from `for_user`; `has_*_permission(request, obj)` ask `user_can` on the
    governed object. Without an object, a permission means "holds it on at least one object"
    (a Publisher of one agent sees the Agents page, with that one agent on it). A change or
    delete posted for a row the user may not see is audited (`AuditsHiddenObjects`)."""

    # admin verb -> the permission action on the governed object (None: never)
    scope_actions = {"view": "view", "change": "change", "delete": "delete"}

    def governed(self, obj):
        return obj

    def governed_queryset(self, request, action):
        raise NotImplementedError

    def _may(self, request, what, obj):
        action = self.scope_actions.get(what)
        if action is None:
            return False
        if obj is None:
            return self.governed_queryset(request, action).exists()
        return user_can(request.user, action, self.governed(obj))

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_view_permission(self, request, obj=None):
        return self._may(request, "view", obj) or self._may(request, "change", obj)

    def has_change_permission(self, request, obj=None):
        return self._may(request, "change", obj)

    def has_delete_permission(self, request, obj=None):
        return self._may(request, "delete", obj)


class ReadOnlyInline(admin.TabularInline):
    """Rows shown under their parent, each a link to its own page; none added, changed or
    deleted there (versions, cases and checks change through their actions)."""

    extra = 0
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ReadOnlyMixin:
    """Records of what happened (runs, results, the audit log): shown, never added, changed or
    deleted through the admin."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def run_verb(modeladmin, request, objects, make_action, done):
    """Run one action per selected object; each success or refusal becomes a message (the
    refusal is audited by the action itself)."""
    for obj in objects:
        try:
            make_action(obj).execute()
        except ActionError as exc:
            modeladmin.message_user(request, f"{obj}: {exc}", messages.ERROR)
        else:
            modeladmin.message_user(request, f"{obj}: {done}.", messages.SUCCESS)


def verb_action(action_class, done, *, description, subject, permission=None, of=None):
    """An admin action that runs `action_class` on each selected row: the row (or `of(row)`)
    is handed to the action as its `subject` keyword, as the acting user's request.
    `permission` names the ModelAdmin's `has_<permission>_permission` that shows the button;
    without it the button shows to whoever sees the changelist, and the action decides."""

    @admin.action(description=description, permissions=[permission] if permission else None)
    def run(modeladmin, request, queryset):
        run_verb(
            modeladmin,
            request,
            queryset,
            lambda obj: action_class(acting_user=request.user, **{subject: of(obj) if of else obj}),
            done,
        )

    return run
