"""RevokeBypass: an Admin withdraws a bypass before it is used."""

from governance.actions._bypass_verb import BypassVerb
from governance.choices import BypassState


class RevokeBypass(BypassVerb):
    """Revoke a `requested` or `approved` bypass (Admin) that has not been used; a used bypass
    is history and stays so."""

    verb = "revoke"
    to_state = BypassState.REVOKED
