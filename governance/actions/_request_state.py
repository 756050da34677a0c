"""Moving a publish request from one state to the next: the one write of `PublishRequest.state`
after creation, guarded by `REQUEST_TRANSITIONS` and made by compare-and-set."""

from governance.choices import REQUEST_TRANSITIONS
from governance.models import PublishRequest


def move_request(publish_request, to_state, **fields):
    """Set the row of `publish_request` (as read: its `state` is the expected one) to
    `to_state`, with `fields`, if no one moved it meanwhile; the object itself is left as read.
    Returns True when this call moved it; the caller decides whether a lost race is a refusal
    or a no-op. A transition `REQUEST_TRANSITIONS` does not declare is a programming error
    (ValueError), never a silent write."""
    from_state = publish_request.state
    if to_state not in REQUEST_TRANSITIONS.get(from_state, ()):
        raise ValueError(f"a {from_state} publish request cannot become {to_state}")
    changed = PublishRequest.objects.filter(pk=publish_request.pk, state=from_state).update(
        state=to_state, **fields
    )
    return changed == 1
