"""RevokeRole: an Admin takes a role back, globally or for one agent or dataset."""

from governance.actions._role_verb import RoleVerb, describe_scope
from governance.roles import materialize, role_action
from sherlock.core.audit import audit
from sherlock.core.errors import ActionConflict


class RevokeRole(RoleVerb):
    """Revoke the user's grant of `role`, globally or for one object: the `RoleGrant` is deleted
    (its history is the audit log) and the user's rights on that scope are derived again from the
    grants that remain, so exactly what this grant gave and no other grant gives is removed (a
    Publisher and a Builder of the same agent share `view_agent`). A role not granted there is
    409 `not_held`, whatever permissions the user happens to hold. Returns the deleted grant."""

    verb = "revoke"

    def check_held(self):
        self.grant = self.held()
        if self.grant is None:
            where = f" of {self.obj}" if self.obj is not None else ""
            raise ActionConflict(f"{self.user} is not a {self.role}{where}.", code="not_held")

    def perform(self):
        self.grant.delete()
        with role_action():
            _, removed = materialize(self.user, self.obj)
        audit(
            "governance.role.revoke",
            actor=self.acting_user,
            target=self.user,
            before={"role": self.role, "scope": describe_scope(self.obj)},
            after={"perms_removed": removed if self.obj is not None else []},
            reason=self.reason,
        )
        return self.grant
