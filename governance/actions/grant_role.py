"""GrantRole: an Admin gives a user a role, globally or for one agent or dataset."""

from governance.actions._role_verb import RoleVerb, change_entry
from governance.choices import RoleScope
from governance.models import RoleGrant
from governance.people.roles import describe_scope, materialize, role_action, scoped_perms
from sherlock.core.errors import ActionConflict


class GrantRole(RoleVerb):
    """Grant `role` to `user`: globally or for one agent or dataset. The grant is recorded
    (`RoleGrant`: who, when, why) and the user's rights on that scope are derived from their
    grants (`governance.people.roles.materialize`: membership of the role's group, or the role's
    verbs as guardian object permissions, `OBJECT_PERMS`). Rights on that scope held without a grant
    (a role group joined from a shell, a verb assigned by hand) are removed by the derivation,
    and the entry names them (`also_removed`). Returns the grant.

    This and `RevokeRole` are the only ways rights change in Sherlock: the admin's user and
    group screens show memberships read-only and guardian's permission screens are not mounted,
    so a staff user cannot grant themselves rights (django-guardian #756). Only a global Admin
    grants; an Admin for one agent holds that agent's verbs, not the right to hand them out.
    """

    verb = "grant"

    def check_held(self):
        if self.held() is not None:
            where = f" of {self.obj}" if self.obj is not None else ""
            raise ActionConflict(
                f"{self.user} is already a {self.role}{where}.", code="already_held"
            )

    def perform(self):
        kind = self.obj._meta.model_name if self.obj is not None else RoleScope.GLOBAL
        grant = RoleGrant.objects.create(
            user=self.user,
            role=self.role,
            scope=kind,
            agent=self.obj if kind == RoleScope.AGENT else None,
            dataset=self.obj if kind == RoleScope.DATASET else None,
            granted_by=self.acting_user,
            reason=self.reason,
        )
        with role_action():
            added, removed = materialize(self.user, self.obj)
        perms = scoped_perms(self.role, self.obj) if self.obj is not None else []
        own = perms if self.obj is not None else [self.role]
        self.audit(
            target=self.user,
            after={
                "role": self.role,
                "scope": describe_scope(self.obj),
                "perms": perms,
                **change_entry(added, removed, own),
            },
            reason=self.reason,
        )
        return grant
