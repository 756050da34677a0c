"""Moving a publish request from one state to the next: the one write of `PublishRequest.state`
after creation, guarded by `REQUEST_TRANSITIONS` and made by compare-and-set
(`sherlock.core.states`)."""

from governance.choices import REQUEST_TRANSITIONS
from sherlock.core.states import move_state


def move_request(publish_request, to_state, **fields):
    """`sherlock.core.states.move_state` along `REQUEST_TRANSITIONS`."""
    return move_state(publish_request, to_state, REQUEST_TRANSITIONS, **fields)
