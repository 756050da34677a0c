"""AcceptInvite: the person an Admin invited sets their password through the link."""

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError

from governance.actions.base import GovernanceAction
from governance.people.invites import user_for_token
from sherlock.core.errors import ActionConflict, ActionInvalid


class AcceptInvite(GovernanceAction):
    """Set the invited user's password, once: the token (`governance.people.invites`) must be
    genuine, unexpired and unused; using it changes the password hash, which voids it. The
    actor is the invitee. Returns the user."""

    noun = "user"
    verb = "join"
    text_limits = {"token": 1000}

    def __init__(self, *, token, password):
        super().__init__(acting_user=None)
        self.token = token or ""
        self.password = password or ""

    def check(self):
        self.user = user_for_token(self.token)
        if self.user is not None:
            # Two uses of one link at once: the second waits on the row, then reads the token
            # against the password the first one set, and is refused.
            get_user_model().objects.select_for_update().filter(pk=self.user.pk).first()
            self.user = user_for_token(self.token)
        if self.user is None:
            raise ActionConflict(
                "This invitation link is not valid any more (used, expired or mistyped). "
                "Ask an Admin for a new one.",
                code="invite_invalid",
            )
        try:
            validate_password(self.password, self.user)
        except ValidationError as exc:
            raise ActionInvalid(" ".join(exc.messages), field="password") from None

    def perform(self):
        self.user.set_password(self.password)
        self.user.save(update_fields=["password"])
        self.audit(actor=self.user, target=self.user)
        return self.user
