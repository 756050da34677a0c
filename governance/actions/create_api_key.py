"""CreateAPIKey: issue a named, expiring API key to a user; its secret is returned once."""

from datetime import timedelta
from typing import cast

from django.conf import settings
from django.utils import timezone

from governance.actions.base import GovernanceAction
from governance.models import APIKey
from governance.people.roles import is_global_admin
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid, raise_invalid

NAME_MAX_LENGTH = cast(int, APIKey._meta.get_field("name").max_length)


class CreateAPIKey(GovernanceAction):
    """Issue a key named `name` to `user`, expiring in `days` (`SHERLOCK_API_KEY_DAYS` when
    not given, at most `SHERLOCK_API_KEY_MAX_DAYS`). A user issues keys to themselves; only a
    global Admin issues one to someone else. `acting_user=None` is the operator at the shell
    (`manage.py create_api_token`), who holds the database anyway.

    `execute()` returns `(api_key, secret)`: the secret is in no row and no audit entry (only
    the key's prefix is), so the caller shows it once and it is never seen again."""

    noun = "apikey"
    verb = "create"

    def __init__(self, *, acting_user, user, name, days=None, reason=""):
        super().__init__(acting_user=acting_user)
        self.user = user
        self.name = name
        self.days = days
        self.reason = reason

    def refusal_target(self):
        return self.user

    def check(self):
        acting = self.acting_user
        if acting is not None and acting.pk != self.user.pk and not is_global_admin(acting):
            raise ActionDenied("Only an Admin may issue an API key to another user.")
        if not self.user.is_active:
            raise ActionConflict(f"{self.user} is inactive.", code="inactive_user")
        errors = []  # the name's and the days' at once
        self.name = " ".join((self.name or "").split())
        if not self.name:
            errors.append(
                ActionInvalid("A key needs a name (what or who will use it).", field="name")
            )
        elif len(self.name) > NAME_MAX_LENGTH:
            errors.append(
                ActionInvalid(
                    f"A key's name is at most {NAME_MAX_LENGTH} characters.", field="name"
                )
            )
        maximum = settings.SHERLOCK_API_KEY_MAX_DAYS
        if self.days is None:
            self.days = settings.SHERLOCK_API_KEY_DAYS
        if (
            isinstance(self.days, bool)
            or not isinstance(self.days, int)
            or not 1 <= self.days <= maximum
        ):
            errors.append(
                ActionInvalid(
                    f"A key lives from 1 to {maximum} days (SHERLOCK_API_KEY_MAX_DAYS).",
                    field="days",
                )
            )
        raise_invalid(errors)

    def perform(self):
        api_key, secret = APIKey.objects.create_key(
            user=self.user,
            name=self.name,
            expiry_date=timezone.now() + timedelta(days=self.days),
            issued_by=self.acting_user,
        )
        self.audit(
            target=self.user,
            after={
                "name": api_key.name,
                "prefix": api_key.prefix,
                "expires_at": api_key.expiry_date.isoformat(),
                "days": self.days,
            },
            reason=self.reason,
        )
        return api_key, secret
