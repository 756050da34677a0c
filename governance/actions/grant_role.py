"""GrantRole: an Admin gives a user a role, globally or for one agent or dataset."""

from django.contrib.auth.models import Group
from guardian.shortcuts import assign_perm

from governance.actions._role_verb import RoleVerb, describe_scope
from governance.roles import role_action, scoped_perms, scoped_roles
from sherlock.core.audit import audit
from sherlock.core.errors import ActionConflict, ActionInvalid


class GrantRole(RoleVerb):
    """Grant `role` to `user`: globally (membership of the role's group) or for one agent or
    dataset (the role's verbs as guardian object permissions, `governance.roles.OBJECT_PERMS`).

    This and `RevokeRole` are the only ways rights change in Sherlock: the admin's user and
    group screens show memberships read-only and guardian's permission screens are not mounted,
    so a staff user cannot grant themselves rights (django-guardian #756). Only a global Admin
    grants; an Admin for one agent holds that agent's verbs, not the right to hand them out.
    """

    verb = "grant"

    def check_held(self):
        if self.obj is None:
            if self.user.groups.filter(name=self.role).exists():
                raise ActionConflict(f"{self.user} is already a {self.role}.", code="already_held")
            return
        if scoped_perms(self.role, self.obj) is None:
            raise ActionInvalid(
                f"A {self.role} cannot be granted for a {self.obj._meta.verbose_name}.",
                field="role",
            )
        if self.role in scoped_roles(self.user, self.obj):
            raise ActionConflict(
                f"{self.user} is already a {self.role} of {self.obj}.", code="already_held"
            )

    def perform(self):
        with role_action():
            if self.obj is None:
                self.user.groups.add(Group.objects.get(name=self.role))
                perms = []
            else:
                perms = scoped_perms(self.role, self.obj)
                for codename in perms:
                    assign_perm(codename, self.user, self.obj)
        audit(
            "governance.role.grant",
            actor=self.acting_user,
            target=self.user,
            after={"role": self.role, "scope": describe_scope(self.obj), "perms": perms},
            reason=self.reason,
        )
        return self.user
