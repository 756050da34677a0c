"""The shared shape of deactivating and reactivating a person (People)."""

from django.contrib.auth import get_user_model

from governance.actions.base import GovernanceAction
from governance.people.roles import is_global_admin
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.sessions import end_sessions_of


class UserActiveVerb(GovernanceAction):
    """Set `user.is_active` to `active`: only a global Admin, never on themselves, and only
    when it changes. An inactive user cannot sign in (password or SSO), their sessions stop
    working and their API keys are refused (re-read on every request); their role grants stay,
    so reactivating restores what they had. Deactivation ends their sessions and unused
    invitation links for good: a reactivated person signs in again, or gets a fresh link."""

    noun = "user"
    active = True

    def __init__(self, *, acting_user, user, reason=""):
        super().__init__(acting_user=acting_user)
        self.user = user
        self.reason = reason or ""

    def refusal_target(self):
        return self.user

    def lock(self):
        self.user = get_user_model().objects.select_for_update().get(pk=self.user.pk)

    def check_role(self):
        if not is_global_admin(self.acting_user):
            raise ActionDenied(f"Only an Admin may {self.verb} people.")

    def check(self):
        self.check_role()
        if self.user.pk == self.acting_user.pk:
            raise ActionConflict(f"You cannot {self.verb} yourself.", code="self")
        if self.user.is_active == self.active:
            state = "active" if self.active else "deactivated"
            raise ActionConflict(f"{self.user} is already {state}.", code="unchanged")

    def perform(self):
        self.user.is_active = self.active
        self.user.save(update_fields=["is_active"])
        if not self.active:
            # For good: the sessions opened before end now, and so do the invitation links
            # sent before (`governance.people.invites` refuses a link older than a deactivation), so
            # reactivating asks for a fresh sign-in or a fresh link.
            end_sessions_of(self.user)
        self.audit(
            target=self.user,
            before={"is_active": not self.active},
            after={"is_active": self.active},
            reason=self.reason,
        )
        return self.user
