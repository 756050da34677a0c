"""Moving a bypass from one state to the next: the one write of `Bypass.state` after creation
(a bypass is created `requested`), guarded by `BYPASS_TRANSITIONS` and made by compare-and-set
(`sherlock.core.states`).

Every verb that changes a bypass calls it: the Admin's approve, deny and revoke
(`_bypass_verb`), the self-approval of a bypass whose policy needs no second Admin
(`request_bypass`), its use by a publish (`publish_version`), its expiry (`expire_bypass`) and
its revocation when publication is requested again (`request_publication`).
"""

from governance.choices import BYPASS_TRANSITIONS
from sherlock.core import states


def may_move(from_state, to_state):
    """Whether `BYPASS_TRANSITIONS` lets a bypass in `from_state` become `to_state`."""
    return states.may_move(BYPASS_TRANSITIONS, from_state, to_state)


def move_bypass(bypass, to_state, **fields):
    """`sherlock.core.states.move_state` along `BYPASS_TRANSITIONS`."""
    return states.move_state(bypass, to_state, BYPASS_TRANSITIONS, **fields)
