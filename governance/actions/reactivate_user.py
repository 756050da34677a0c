"""ReactivateUser: an Admin lets a deactivated person sign in again."""

from governance.actions._user_state import UserActiveVerb


class ReactivateUser(UserActiveVerb):
    """See `UserActiveVerb`: `is_active` becomes True, with the role grants they kept."""

    verb = "reactivate"
    active = True
