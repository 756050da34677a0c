"""RevokeRole: an Admin takes a role back, globally or for one agent or dataset."""

from django.contrib.auth.models import Group
from guardian.shortcuts import remove_perm

from agents.audit import audit
from agents.errors import ActionConflict, ActionDenied, ActionInvalid
from governance.actions.base import GovernanceAction
from governance.actions.grant_role import describe_scope
from governance.choices import Role
from governance.roles import is_global_admin, role_action, scoped_perms, scoped_roles


class RevokeRole(GovernanceAction):
    """Revoke `role` from `user`, globally or for one object. For an object grant only the
    verbs no other role the user still holds on that object needs are removed (a Publisher and
    an Admin of the same agent share `view_agent`)."""

    noun = "role"
    verb = "revoke"

    def __init__(self, *, acting_user, user, role, obj=None, reason=""):
        super().__init__(acting_user=acting_user)
        self.user = user
        self.role = role
        self.obj = obj
        self.reason = reason

    def refusal_target(self):
        return self.user

    def check(self):
        if not is_global_admin(self.acting_user):
            raise ActionDenied("Only an Admin may revoke roles.")
        if self.role not in Role.values:
            raise ActionInvalid(f"{self.role!r} is not a role", field="role")
        if self.obj is None:
            if not self.user.groups.filter(name=self.role).exists():
                raise ActionConflict(f"{self.user} is not a {self.role}.", code="not_held")
        elif self.role not in scoped_roles(self.user, self.obj):
            raise ActionConflict(
                f"{self.user} is not a {self.role} of {self.obj}.", code="not_held"
            )

    def perform(self):
        with role_action():
            if self.obj is None:
                self.user.groups.remove(Group.objects.get(name=self.role))
                removed = []
            else:
                keep = set()
                for other in scoped_roles(self.user, self.obj) - {self.role}:
                    keep |= set(scoped_perms(other, self.obj))
                removed = [p for p in scoped_perms(self.role, self.obj) if p not in keep]
                for codename in removed:
                    remove_perm(codename, self.user, self.obj)
        audit(
            "governance.role.revoke",
            actor=self.acting_user,
            target=self.user,
            before={"role": self.role, "scope": describe_scope(self.obj)},
            after={"perms_removed": removed},
            reason=self.reason,
        )
        return self.user
