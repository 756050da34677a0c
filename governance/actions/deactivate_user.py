"""DeactivateUser: an Admin stops a person from signing in, keeping their history."""

from governance.actions._user_state import UserActiveVerb


class DeactivateUser(UserActiveVerb):
    """See `UserActiveVerb`: `is_active` becomes False."""

    verb = "deactivate"
    active = False
