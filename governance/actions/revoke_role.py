"""RevokeRole: an Admin takes a role back, globally or for one agent or dataset."""

from django.contrib.auth.models import Group
from guardian.shortcuts import remove_perm

from governance.actions._role_verb import RoleVerb, describe_scope
from governance.roles import role_action, scoped_perms, scoped_roles
from sherlock.core.audit import audit
from sherlock.core.errors import ActionConflict


class RevokeRole(RoleVerb):
    """Revoke `role` from `user`, globally or for one object. For an object grant only the
    verbs no other role the user still holds on that object needs are removed (a Publisher and
    an Admin of the same agent share `view_agent`)."""

    verb = "revoke"

    def check_held(self):
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
