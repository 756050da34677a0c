"""Moving a publish request from one state to the next: the one write of `PublishRequest.state`
after creation, guarded by `REQUEST_STATES` and made by compare-and-set (`sherlock.core.states`)."""

from governance.choices import REQUEST_STATES


def move_request(publish_request, to_state, **fields):
    """`REQUEST_STATES.move`: True when this call moved the request."""
    return REQUEST_STATES.move(publish_request, to_state, **fields)
