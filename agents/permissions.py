"""One answer to "may this user do this to this object?", from global OR object permissions.

django-guardian's object check ignores global (group/user model) permissions, and Django's own
check ignores object permissions; Sherlock's roles may be granted either way (DESIGN section 2),
so every check and every listing goes through these two helpers.
"""

from django.db import models
from guardian.shortcuts import get_objects_for_user


def perm_name(model, action):
    """`("view", Agent)` -> "agents.view_agent"."""
    opts = model._meta
    return f"{opts.app_label}.{action}_{opts.model_name}"


def user_can(user, action, obj):
    """True when `user` holds `action` on `obj` globally (group or user) or on that object."""
    if user is None or not user.is_active:
        return False
    if user.is_superuser:
        return True
    name = perm_name(type(obj), action)
    return user.has_perm(name) or user.has_perm(name, obj)


class ScopedQuerySet(models.QuerySet):
    """A queryset that knows what a user may see (STYLE.md item 6)."""

    def for_user(self, user, action="view"):
        if user is None or not user.is_active:
            return self.none()
        if user.is_superuser:
            return self
        name = perm_name(self.model, action)
        # accept_global_perms: a global grant shows every row; otherwise the object grants.
        return get_objects_for_user(
            user, name, klass=self, accept_global_perms=True, with_superuser=True
        )


class AgentScopedQuerySet(models.QuerySet):
    """Rows that belong to an agent (versions, publish requests, bypasses): a user sees them
    when they may see the agent, so one grant (global or per agent) scopes them all."""

    agent_path = "agent"

    def for_user(self, user, action="view"):
        from agents.models import Agent

        agents = Agent.objects.for_user(user, action)
        return self.filter(**{f"{self.agent_path}__in": agents})
