"""Moving a bypass from one state to the next: the one write of `Bypass.state` after creation
(a bypass is created `requested`), guarded by `BYPASS_TRANSITIONS` and made by compare-and-set.

Every verb that changes a bypass calls it: the Admin's approve, deny and revoke
(`_bypass_verb`), the self-approval of a bypass whose policy needs no second Admin
(`request_bypass`), its use by a publish (`publish_version`), its expiry (`expire_bypass`) and
its revocation when publication is requested again (`request_publication`).
"""

from governance.choices import BYPASS_TRANSITIONS
from governance.models import Bypass


def may_move(from_state, to_state):
    """Whether `BYPASS_TRANSITIONS` lets a bypass in `from_state` become `to_state`."""
    return to_state in BYPASS_TRANSITIONS.get(from_state, ())


def move_bypass(bypass, to_state, **fields):
    """Set the row of `bypass` (as read: its `state` is the expected one) to `to_state`, with
    `fields`, if no one moved it meanwhile; the object itself is left as read. Returns True when
    this call moved it; the caller decides whether a lost race is a refusal or a no-op. A
    transition `BYPASS_TRANSITIONS` does not declare is a programming error (ValueError), never
    a silent write."""
    from_state = bypass.state
    if not may_move(from_state, to_state):
        raise ValueError(f"a {from_state} bypass cannot become {to_state}")
    changed = Bypass.objects.filter(pk=bypass.pk, state=from_state).update(state=to_state, **fields)
    return changed == 1
