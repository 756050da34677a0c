"""One answer to "may this user do this to this object?", from global OR object permissions.

django-guardian's object check ignores global (group/user model) permissions, and Django's own
check ignores object permissions; Sherlock's roles may be granted either way,
so every check and every listing goes through these two helpers.
"""

from typing import Any

from django.contrib.auth import get_user_model
from django.db import models
from guardian.shortcuts import get_objects_for_user


def perm_name(model: Any, action: str) -> str:
    """`("view", Agent)` -> "agents.view_agent"."""
    opts = model._meta
    return f"{opts.app_label}.{action}_{opts.model_name}"


def user_can(user: Any, action: str, obj: Any) -> bool:
    """True when `user` holds `action` on `obj` globally (group or user) or on that object."""
    if user is None or not user.is_active:
        return False
    if user.is_superuser:
        return True
    name = perm_name(type(obj), action)
    return bool(user.has_perm(name) or user.has_perm(name, obj))


class ScopedQuerySet(models.QuerySet[Any]):
    """A queryset that knows what a user may see."""

    def for_user(self, user: Any, action: str = "view") -> "models.QuerySet[Any]":
        if user is None or not user.is_active:
            return self.none()
        if user.is_superuser:
            return self
        name = perm_name(self.model, action)
        # accept_global_perms: a global grant shows every row; otherwise the object grants.
        return get_objects_for_user(
            user, name, klass=self, accept_global_perms=True, with_superuser=True
        )


def within(
    queryset: models.QuerySet[Any], lookup: str, allowed: models.QuerySet[Any]
) -> models.QuerySet[Any]:
    """`queryset.filter(<lookup>__in=allowed)`, or `queryset` itself when `allowed` is every row
    of its model (a global grant, a superuser: guardian hands back the unfiltered queryset) and
    every row of `queryset` has one (the path's foreign keys are not nullable): a subquery over
    every row filters nothing, but it was compiled for every API request and nested in every
    list's SQL. `none()` has a filter, so it still scopes to none."""
    if not allowed.query.has_filters() and not allowed.query.is_sliced:
        model, required = queryset.model, True
        for name in lookup.split("__"):
            field = model._meta.get_field(name)
            required = required and field.many_to_one and not field.null
            model = field.related_model
        if required:
            return queryset
    return queryset.filter(**{f"{lookup}__in": allowed})


class ScopedThroughQuerySet(models.QuerySet[Any]):
    """Rows governed by a related object (an agent's versions, publish requests, bypasses): a
    user sees them when they may see that object, so one grant (global or on the object) scopes
    them all. `scope_path` is the lookup from these rows to the governing object, whose own
    queryset has `for_user`; the model is found by following the path, so the kernel names no
    app."""

    scope_path = ""

    def for_user(self, user: Any, action: str = "view") -> models.QuerySet[Any]:
        governing = self.model
        for name in self.scope_path.split("__"):
            governing = governing._meta.get_field(name).related_model
        allowed = governing._default_manager.for_user(user, action)
        return within(self, self.scope_path, allowed)


# `with_perm` needs a backend named when several are configured: global (model) permissions.
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
# Who is a global Admin, decided here once for the actions, the navigation and the "ask an
# Admin" lists: an active superuser, or an active member of the Admin role's group (the group
# governance's roles keep, `governance.choices.Role.ADMIN`). A permission held outside that
# group (`auth.change_user` given by hand in the admin) makes no Admin.
ADMIN_GROUP = "Admin"
ADMINS_NAMED = 5


def is_global_admin(user: Any) -> bool:
    """Whether `user` is a global Admin (see `ADMIN_GROUP`): roles, people and publishing
    policies are managed by global Admins only. One query (none for a superuser)."""
    if user is None or not getattr(user, "is_active", False):
        return False
    return bool(user.is_superuser or user.groups.filter(name=ADMIN_GROUP).exists())


def global_admins() -> models.QuerySet[Any]:
    """Every active global Admin, as a queryset of users."""

    return (
        get_user_model()
        ._default_manager.filter(is_active=True)
        .filter(models.Q(is_superuser=True) | models.Q(groups__name=ADMIN_GROUP))
        .distinct()
    )


def who_grants_roles() -> list[str]:
    """The usernames (at most `ADMINS_NAMED`, sorted) of the global Admins, who grant roles, for
    an empty page that says why it is empty: one query."""
    users = global_admins().order_by("username").values_list("username", flat=True)
    return list(users[:ADMINS_NAMED])


def missing_role_text(what: str) -> str:
    """Why a person who sees none of `what` ("runs", "costs") sees none: their roles cover no
    agent, and who may grant one."""
    admins = who_grants_roles()
    who = (
        f"an Admin ({', '.join(admins)})"
        if admins
        else "an Admin (none is set up: see docs/guide.md)"
    )
    return (
        f"You see no {what} because your roles cover no agent: {what} are shown for the agents "
        "a role of yours (Viewer, Editor, Builder, Publisher or Admin) covers"
        + (", and for the datasets it covers" if what == "runs" else "")
        + f". Ask {who} to grant you one, globally or for an agent, on the People page "
        "(/people/)."
    )
