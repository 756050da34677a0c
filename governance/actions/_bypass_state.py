"""Moving a bypass from one state to the next: the one write of `Bypass.state` after creation
(a bypass is created `requested`), guarded by `BYPASS_STATES` and made by compare-and-set
(`sherlock.core.states`).

Every verb that changes a bypass calls it: the Admin's approve, deny and revoke
(`_bypass_verb`), the self-approval of a bypass whose policy needs no second Admin
(`request_bypass`), its use by a publish (`publish_version`), its expiry (`expire_bypass`) and
its revocation when publication is requested again (`request_publication`).
"""

from governance.choices import BYPASS_STATES


def may_move(from_state, to_state):
    """Whether `BYPASS_STATES` lets a bypass in `from_state` become `to_state`."""
    return BYPASS_STATES.may_move(from_state, to_state)


def move_bypass(bypass, to_state, **fields):
    """`BYPASS_STATES.move`: True when this call moved the bypass."""
    return BYPASS_STATES.move(bypass, to_state, **fields)
