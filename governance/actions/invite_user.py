"""InviteUser: an Admin adds a person, who sets their own password through a one-time link."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from governance.actions.base import GovernanceAction
from governance.people.invites import make_token
from governance.people.roles import is_global_admin
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid, raise_invalid


class InviteUser(GovernanceAction):
    """Create the account `username` (active, no usable password, no role: roles are granted
    with `GrantRole`, on the People page) and return `(user, token)`: the token of the one-time
    sign-up link (`governance.people.invites`), shown once to the Admin to copy. Only a global Admin
    invites; the entry names the person, never the token."""

    noun = "user"
    verb = "invite"
    text_limits = {"username": 150, "email": 254, "first_name": 150, "last_name": 150}

    def __init__(self, *, acting_user, username, email="", first_name="", last_name=""):
        super().__init__(acting_user=acting_user)
        self.username = (username or "").strip()
        self.email = (email or "").strip()
        self.first_name = (first_name or "").strip()
        self.last_name = (last_name or "").strip()

    def check_role(self):
        if not is_global_admin(self.acting_user):
            raise ActionDenied("Only an Admin may add people.")

    def check(self):
        self.check_role()
        if not settings.SHERLOCK_PASSWORD_LOGIN:
            raise ActionConflict(
                "Password sign-in is off (SHERLOCK_PASSWORD_LOGIN): people join through single "
                "sign-on, at their first sign-in.",
                code="password_login_off",
            )
        errors = []  # the username's and the e-mail's at once
        if not self.username:
            errors.append(ActionInvalid("A username is required.", field="username"))
        else:
            try:
                UnicodeUsernameValidator()(self.username)
            except ValidationError:
                errors.append(
                    ActionInvalid(
                        "A username has letters, digits and @ . + - _ only.", field="username"
                    )
                )
        if self.email:
            try:
                validate_email(self.email)
            except ValidationError:
                errors.append(
                    ActionInvalid(f"{self.email!r} is not an e-mail address.", field="email")
                )
        raise_invalid(errors)
        if get_user_model().objects.filter(username__iexact=self.username).exists():
            raise ActionConflict(f"{self.username} already exists.", code="exists")

    def perform(self):
        user = get_user_model().objects.create_user(
            username=self.username,
            email=self.email,
            first_name=self.first_name,
            last_name=self.last_name,
        )  # no password: an unusable one until the link is used
        self.audit(
            target=user,
            after={"username": user.username, "email": user.email},
        )
        return user, make_token(user)
