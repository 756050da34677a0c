"""The five roles (docs/governance.md) as Django groups, and the model permissions each holds.

A role is granted as a record (`governance.models.RoleGrant`: user, role, scope, who, when,
why), and the rights are derived from the records (`materialize`): a role granted globally is
membership of the group, a role granted for one agent or dataset is its verbs as guardian object
permissions on that object; `OBJECT_PERMS` lists which verbs a scoped grant carries. Who holds
which role is read from the records (`role_grants`, `scoped_roles`), never inferred from the
permissions, whose sets overlap (an Admin of a dataset holds exactly an Editor's verbs).
"""

import contextlib
import contextvars

from django.contrib.auth.models import Group, Permission
from django.db.models import Case, IntegerField, Q, Value, When

from governance.choices import Role
from governance.models import RoleGrant
from sherlock.core import permissions

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
    # Reads what it is granted on (a dataset, with the runs on it; an agent, with its versions
    # and runs), or everything when global; changes nothing.
    Role.VIEWER: _READ_ALL,
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
    Role.VIEWER: {"dataset": ["view_dataset"], "agent": ["view_agent"]},
    Role.EDITOR: {"dataset": ["view_dataset", "change_dataset", "edit_dataset"]},
    Role.BUILDER: {"agent": ["view_agent", "change_agent", "build_agent"]},
    Role.PUBLISHER: {"agent": ["view_agent", "publish_agent"]},
    Role.ADMIN: {
        "agent": ["view_agent", "change_agent", "build_agent", "publish_agent", "bypass_agent"],
        "dataset": ["view_dataset", "change_dataset", "edit_dataset"],
    },
}


def sync_role_groups(apps):
    """Create or update the role groups with their permissions (used by the data migration)."""
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
    agent carries that agent's verbs, never the right to hand out rights. The one rule is the
    kernel's (`sherlock.core.permissions.is_global_admin`), which the navigation and the "ask an
    Admin" lists read too."""
    return permissions.is_global_admin(user)


def holds_admin_rights(user):
    """Whether `user` is a superuser or holds the Admin's bypass right anywhere (the Admin
    group, or Admin of one agent), active or not. Such an account is one of the two Admins of
    the second-Admin rule, so only a superuser may set its password in the admin: another Admin
    who could would approve their own bypass under its name."""
    if user.is_superuser:
        return True
    # Imported here: guardian's models exist only once the registry is ready (roles are read by the
    # migrations).
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
    """The roles granted to `user` on `obj` (`RoleGrant` records, never inferred from the
    permissions held), as plain strings."""

    return set(RoleGrant.objects.on(obj).filter(user=user).values_list("role", flat=True))


def global_roles(user):
    """The roles granted to `user` globally, as plain strings."""

    return set(RoleGrant.objects.on(None).filter(user=user).values_list("role", flat=True))


def materialize(user, obj=None):
    """Make `user`'s rights on one scope exactly what their grants there give, and return the
    (added, removed) group names (global) or guardian codenames (`obj`).

    Globally that is membership of the groups of the roles granted globally; on an agent or a
    dataset it is the union of the `OBJECT_PERMS` verbs of the roles granted there, among the
    verbs roles carry on that kind of object (a permission no role carries is not ours to
    touch). Run inside `role_action()` by the role actions, after they wrote the grant, so a
    revocation keeps what the other grants still give and nothing more.
    Rights held there without a grant (a role group joined from a shell, a verb assigned by
    hand) are removed too; the catch-all receivers are quiet inside `role_action()`, so the
    callers name them in their entry (`also_removed`, `also_added`).
    """
    # Imported here: guardian's models exist only once the registry is ready (roles are read by the
    # migrations).
    from guardian.shortcuts import assign_perm, get_user_perms, remove_perm

    if obj is None:
        wanted = global_roles(user)
        held = set(user.groups.filter(name__in=Role.values).values_list("name", flat=True))
        added, removed = sorted(wanted - held), sorted(held - wanted)
        if added:
            user.groups.add(*Group.objects.filter(name__in=added))
        if removed:
            user.groups.remove(*Group.objects.filter(name__in=removed))
        derive_staff(user)
        return added, removed
    kind = obj._meta.model_name
    managed = {p for perms in OBJECT_PERMS.values() for p in perms.get(kind, [])}
    wanted = set()
    for role in scoped_roles(user, obj):
        wanted |= set(scoped_perms(role, obj))
    held = set(get_user_perms(user, obj)) & managed
    added, removed = sorted(wanted - held), sorted(held - wanted)
    for codename in added:
        assign_perm(codename, user, obj)
    for codename in removed:
        remove_perm(codename, user, obj)
    derive_staff(user)
    return added, removed


def derive_staff(user):
    """`is_staff` (the admin's door) is derived, never set by hand: a user holding any role
    grant, global or scoped, uses the admin (Editors write cases there, Builders register
    agents, Publishers and Admins open the version list), and a user with none does not. Run by
    every re-derivation (`materialize`); the change is audited as `auth.user.privileges` by the
    catch-all receiver, like any flag change."""

    staff = user.is_superuser or RoleGrant.objects.filter(user=user).exists()
    if user.is_staff != staff:
        user.is_staff = staff
        user.save(update_fields=["is_staff"])


def describe_grant(grant):
    """One `RoleGrant` as the API lists it: `{"user", "role", "scope", "agent", "dataset"}`,
    the user by username and the object by slug."""
    return {
        "user": grant.user.username,
        "role": grant.role,
        "scope": grant.scope,
        "agent": grant.agent.slug if grant.agent_id else None,
        "dataset": grant.dataset.slug if grant.dataset_id else None,
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
    """Every role granted, optionally of one user, as `describe_grant` dicts ordered by user,
    scope (global, agent, dataset), object and role: the `RoleGrant` records, never a role
    inferred from overlapping permissions. One query however many grants there are."""

    grants = RoleGrant.objects.select_related("user", "agent", "dataset")
    if user is not None:
        grants = grants.filter(user=user)
    order = Case(
        When(scope="global", then=Value(0)),
        When(scope="agent", then=Value(1)),
        default=Value(2),
        output_field=IntegerField(),
    )
    grants = grants.order_by("user__username", order, "agent__slug", "dataset__slug", "role")
    return [describe_grant(grant) for grant in grants]


def describe_scope(obj):
    """How an audit entry names a role's scope: "global", or the object's type, id and name."""
    if obj is None:
        return "global"
    return {"type": f"{obj._meta.app_label}.{obj._meta.model_name}", "id": obj.pk, "repr": str(obj)}
