"""DenyBypass: an Admin turns down a requested bypass."""

from governance.actions._bypass_verb import BypassVerb
from governance.choices import BypassState


class DenyBypass(BypassVerb):
    """Deny a `requested` bypass (Admin); the decision stays blocked. Any Admin may deny,
    including the requester (second thoughts are the point of a two-person rule)."""

    verb = "deny"
    to_state = BypassState.DENIED
