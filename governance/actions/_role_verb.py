"""The shared shape of the two verbs that change a user's roles."""

from django.contrib.auth import get_user_model

from governance.actions.base import GovernanceAction
from governance.choices import Role
from governance.models import RoleGrant
from governance.people.roles import is_global_admin, scoped_perms
from sherlock.core.errors import ActionDenied, ActionInvalid


def an(word) -> str:
    """ "an Editor", "a Builder", "an agent": the article a word takes."""
    word = str(word)
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def change_entry(added, removed, own):
    """What `materialize` changed on the scope beyond the verb's own `own` rights (group names or
    codenames), for the audit entry: the rights held without a grant that the derivation
    removed (a hand-made membership, a verb given from a shell) or restored. Nothing changes
    unaudited, since the catch-all receivers are quiet inside the role actions."""
    extra = {}
    if also_added := sorted(set(added) - set(own)):
        extra["also_added"] = also_added
    if also_removed := sorted(set(removed) - set(own)):
        extra["also_removed"] = also_removed
    return extra


def check_grantable(role, obj):
    """`role` is a role, and one that may hold on `obj` (None: everywhere), else ActionInvalid on
    the `role` field: the rule of every verb that grants (by hand or from single sign-on)."""
    if role not in Role.values:
        raise ActionInvalid(f"{role!r} is not a role", field="role")
    if obj is not None and scoped_perms(role, obj) is None:
        raise ActionInvalid(
            f"{an(role)[0].upper()}{an(role)[1:]} cannot be granted for "
            f"{an(obj._meta.verbose_name)}.",
            field="role",
        )


class RoleVerb(GovernanceAction):
    """Grant or revoke `role` for `user`, globally (`obj` None) or for one agent or dataset.
    Only a global Admin changes roles; a refusal is recorded against the user. A role with no
    meaning on that kind of object (an Editor of an agent) is refused either way."""

    noun = "role"

    def __init__(self, *, acting_user, user, role, obj=None, reason=""):
        super().__init__(acting_user=acting_user)
        self.user = user
        self.role = role
        self.obj = obj
        self.reason = reason

    def refusal_target(self):
        return self.user

    def lock(self):
        # Grants and revocations of one user are serialised on the user's row: each re-derives
        # the user's rights on the scope from the grants it reads, so two at once must not both
        # read the grants as they were before the other.
        if self.user is not None and self.user.pk is not None:
            get_user_model().objects.select_for_update().filter(pk=self.user.pk).first()

    def check_role(self):
        if not is_global_admin(self.acting_user):
            raise ActionDenied(f"Only an Admin may {self.verb} roles.")

    def check(self):
        self.check_role()
        check_grantable(self.role, self.obj)
        self.check_held()

    def held(self):
        """The user's grant of the role on the scope, or None."""

        return RoleGrant.objects.on(self.obj).filter(user=self.user, role=self.role).first()

    def check_held(self):
        """Refuse when the user's grants leave nothing to do (held already, not held)."""
        raise NotImplementedError
