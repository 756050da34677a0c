"""The four roles of DESIGN section 2 as Django groups, and the model permissions each holds.

A role granted globally is membership of the group. A role granted for one agent or dataset is
the same verbs as guardian object permissions on that object (`grant_role` in governance
actions); `OBJECT_PERMS` lists which verbs a scoped grant carries.
"""

import contextlib
import contextvars

from django.db.models import Q

from governance.choices import Role

_CRUD = ("add", "change", "delete", "view")

_DATASET_MODELS = ("dataset", "datasetversion", "case", "caseversion", "check")
_RESULT_MODELS = ("run", "trial", "checkresult", "caseresult", "judgecall", "costentry")


def _perms(app, models, actions):
    return [f"{app}.{action}_{model}" for model in models for action in actions]


_READ_ALL = (
    _perms("agents", ("agent", "agentversion", "tool"), ("view",))
    + _perms("evaluations", _DATASET_MODELS + _RESULT_MODELS + ("modelprice",), ("view",))
    + _perms("governance", ("publishingpolicy", "publishrequest", "bypass"), ("view",))
)

ROLE_PERMS = {
    Role.EDITOR: _READ_ALL
    + _perms("evaluations", _DATASET_MODELS, _CRUD)
    + _perms("evaluations", ("humanlabel",), ("add", "change", "view"))
    + ["evaluations.edit_dataset"],
    Role.BUILDER: _READ_ALL
    + _perms("agents", ("agent", "agentversion", "tool"), ("add", "change"))
    + ["agents.build_agent", "evaluations.add_run", "governance.add_publishrequest"],
    Role.PUBLISHER: _READ_ALL + ["agents.publish_agent"],
    Role.ADMIN: None,  # every permission of the three apps, plus user and group management
}

ADMIN_EXTRA = _perms("auth", ("user", "group"), ("add", "change", "view")) + [
    "auth.view_permission"
]

OBJECT_PERMS = {
    Role.EDITOR: {"dataset": ["view_dataset", "change_dataset", "edit_dataset"]},
    Role.BUILDER: {"agent": ["view_agent", "change_agent", "build_agent"]},
    Role.PUBLISHER: {"agent": ["view_agent", "publish_agent"]},
    Role.ADMIN: {
        "agent": ["view_agent", "change_agent", "build_agent", "publish_agent", "bypass_agent"],
        "dataset": ["view_dataset", "change_dataset", "edit_dataset"],
    },
}


def sync_role_groups(apps):
    """Create or update the four groups with their permissions (used by the data migration)."""
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    all_app_perms = permission_model.objects.filter(
        content_type__app_label__in=["agents", "evaluations", "governance"]
    )

    def lookup(names):
        wanted = {tuple(name.split(".", 1)) for name in names}
        found = [
            p
            for p in permission_model.objects.select_related("content_type")
            if (p.content_type.app_label, p.codename) in wanted
        ]
        missing = wanted - {(p.content_type.app_label, p.codename) for p in found}
        if missing:
            raise RuntimeError(f"permissions missing for roles: {sorted(missing)}")
        return found

    for role, names in ROLE_PERMS.items():
        group, _ = group_model.objects.get_or_create(name=role.value)
        perms = list(all_app_perms) + lookup(ADMIN_EXTRA) if names is None else lookup(names)
        group.permissions.set(perms)


def is_global_admin(user):
    """Roles and publishing policies are managed by global Admins only: a role granted for one
    agent carries that agent's verbs, never the right to hand out rights."""
    if user is None or not user.is_active:
        return False
    return user.is_superuser or user.groups.filter(name=Role.ADMIN.value).exists()


def holds_admin_rights(user):
    """Whether `user` is a superuser or holds the Admin's bypass right anywhere (the Admin
    group, or Admin of one agent), active or not. Such an account is one of the two Admins of
    the second-Admin rule, so only a superuser may set its password in the admin: another Admin
    who could would approve their own bypass under its name."""
    if user.is_superuser:
        return True
    from django.contrib.auth.models import Permission
    from guardian.models import GroupObjectPermission, UserObjectPermission

    bypass = {
        "permission__content_type__app_label": "agents",
        "permission__codename": "bypass_agent",
    }
    held_globally = Permission.objects.filter(
        content_type__app_label="agents", codename="bypass_agent"
    ).filter(Q(user=user) | Q(group__user=user))
    return (
        held_globally.exists()
        or UserObjectPermission.objects.filter(user=user, **bypass).exists()
        or GroupObjectPermission.objects.filter(group__user=user, **bypass).exists()
    )


def scoped_perms(role, obj):
    """The guardian codenames a grant of `role` on `obj` carries, or None when the role has no
    meaning for that kind of object (an Editor of an agent)."""
    return OBJECT_PERMS.get(Role(role), {}).get(obj._meta.model_name)


def scoped_roles(user, obj):
    """The roles `user` holds on `obj` through object permissions (all of a role's verbs), as
    plain strings."""
    from guardian.shortcuts import get_user_perms

    held = set(get_user_perms(user, obj))
    return {
        role.value
        for role in Role
        if (perms := scoped_perms(role, obj)) is not None and set(perms) <= held
    }


# Set while GrantRole/RevokeRole change memberships and object permissions: they write their own
# `governance.role.*` entries, so the catch-all receivers (governance.receivers) stay quiet.
_role_action = contextvars.ContextVar("sherlock_role_action", default=False)


@contextlib.contextmanager
def role_action():
    token = _role_action.set(True)
    try:
        yield
    finally:
        _role_action.reset(token)


def in_role_action():
    return _role_action.get()


def role_grants(user=None):
    """Every role held, as `{"user", "role", "scope", "agent", "dataset"}` dicts (scope
    `global`, `agent` or `dataset`, with the object's slug), optionally of one user: global
    memberships of the role groups, then object grants (a role counts on an object when all of
    its `OBJECT_PERMS` verbs are held there, as `scoped_roles` reads them). Four queries
    however many grants there are."""
    from django.contrib.auth import get_user_model
    from guardian.models import UserObjectPermission

    from agents.models import Agent
    from evaluations.models import Dataset

    memberships = (
        get_user_model()
        .groups.through.objects.filter(group__name__in=Role.values)
        .select_related("user", "group")
    )
    object_perms = UserObjectPermission.objects.filter(
        content_type__app_label__in=["agents", "evaluations"],
        content_type__model__in=["agent", "dataset"],
    ).select_related("user", "permission", "content_type")
    if user is not None:
        memberships = memberships.filter(user=user)
        object_perms = object_perms.filter(user=user)

    grants = [
        {"user": m.user.username, "role": m.group.name, "scope": "global"} for m in memberships
    ]
    held = {}  # (username, model name, object pk) -> codenames held there
    for perm in object_perms:
        key = (perm.user.username, perm.content_type.model, str(perm.object_pk))
        held.setdefault(key, set()).add(perm.permission.codename)
    slugs = {}
    for model in (Agent, Dataset):
        name = model._meta.model_name
        pks = {pk for (_, kind, pk) in held if kind == name}
        slugs[name] = {
            str(pk): slug for pk, slug in model.objects.filter(pk__in=pks).values_list("pk", "slug")
        }
    for (username, kind, pk), codenames in held.items():
        slug = slugs[kind].get(pk)
        if slug is None:  # the object is gone; guardian leaves its rows behind
            continue
        for role in Role:
            perms = OBJECT_PERMS[role].get(kind)
            if perms and set(perms) <= codenames:
                grants.append({"user": username, "role": role.value, "scope": kind, kind: slug})
    for grant in grants:
        grant.setdefault("agent", None)
        grant.setdefault("dataset", None)
    order = {"global": 0, "agent": 1, "dataset": 2}
    return sorted(
        grants,
        key=lambda g: (g["user"], order[g["scope"]], g["agent"] or g["dataset"] or "", g["role"]),
    )
