"""The shared shape of the two verbs that change a user's roles."""

from governance.actions.base import GovernanceAction
from governance.choices import Role
from governance.roles import is_global_admin
from sherlock.core.errors import ActionDenied, ActionInvalid


def describe_scope(obj):
    if obj is None:
        return "global"
    return {"type": f"{obj._meta.app_label}.{obj._meta.model_name}", "id": obj.pk, "repr": str(obj)}


class RoleVerb(GovernanceAction):
    """Grant or revoke `role` for `user`, globally (`obj` None) or for one agent or dataset.
    Only a global Admin changes roles; a refusal is recorded against the user."""

    noun = "role"

    def __init__(self, *, acting_user, user, role, obj=None, reason=""):
        super().__init__(acting_user=acting_user)
        self.user = user
        self.role = role
        self.obj = obj
        self.reason = reason

    def refusal_target(self):
        return self.user

    def check_role(self):
        if not is_global_admin(self.acting_user):
            raise ActionDenied(f"Only an Admin may {self.verb} roles.")

    def check(self):
        self.check_role()
        if self.role not in Role.values:
            raise ActionInvalid(f"{self.role!r} is not a role", field="role")
        self.check_held()

    def check_held(self):
        """Refuse when the user's current roles leave nothing to do (held already, not held)."""
        raise NotImplementedError
