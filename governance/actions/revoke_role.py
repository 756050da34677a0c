"""RevokeRole: an Admin takes a role back, globally or for one agent or dataset."""

from governance.actions._role_verb import RoleVerb, an, change_entry
from governance.choices import RoleScope
from governance.models import RoleGrant
from governance.people.roles import describe_scope, materialize, role_action, scoped_perms
from sherlock.core.errors import ActionConflict


class RevokeRole(RoleVerb):
    """Revoke the user's grant of `role`, globally or for one object: the `RoleGrant` is deleted
    (its history is the audit log) and the user's rights on that scope are derived again from the
    grants that remain, so exactly what this grant gave and no other grant gives is removed (a
    Publisher and a Builder of the same agent share `view_agent`). A role not granted there is
    409 `not_held`, whatever permissions the user happens to hold, with one exception: a
    membership of the role's group made outside `GrantRole` (a shell, a script) is that role
    globally, so revoking the role globally removes it (the entry says `without_grant`).
    The entry names what was removed: `perms_removed` (the grant's verbs on the object) or
    `groups_removed` (the role's group), and `also_removed` / `also_added` for anything else the
    derivation changed on that scope (rights held without a grant). Returns the deleted grant."""

    verb = "revoke"

    def check_held(self):
        self.grant = self.held()
        if self.grant is None and self.obj is None and self.in_group():
            return  # a hand-made membership of the role's group: revocable, see above
        if self.grant is None:
            where = f" of {self.obj}" if self.obj is not None else ""
            raise ActionConflict(f"{self.user} is not {an(self.role)}{where}.", code="not_held")

    def in_group(self):
        return self.user.groups.filter(name=self.role).exists()

    def perform(self):
        without_grant = self.grant is None
        if without_grant:
            self.grant = RoleGrant(user=self.user, role=self.role, scope=RoleScope.GLOBAL)
        else:
            self.grant.delete()
        with role_action():
            added, removed = materialize(self.user, self.obj)
        own = scoped_perms(self.role, self.obj) if self.obj is not None else [self.role]
        noun = "perms_removed" if self.obj is not None else "groups_removed"
        after = {noun: sorted(set(removed) & set(own)), **change_entry(added, removed, own)}
        if without_grant:
            after["without_grant"] = True
        self.audit(
            target=self.user,
            before={"role": self.role, "scope": describe_scope(self.obj)},
            after=after,
            reason=self.reason,
        )
        return self.grant
