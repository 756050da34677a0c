"""Moving a row from one state to the next by compare-and-set (STYLE.md item 4).

Each app declares its allowed transitions once, in its `choices.py`, and names one writer per
stateful model (`governance.actions._bypass_state.move_bypass`, `_request_state.move_request`)
built on `move_state`, so a state changes in one place, along a declared edge, and never twice.
"""


def may_move(transitions, from_state, to_state):
    """Whether `transitions` (state -> the states it may become) allows this move."""
    return to_state in transitions.get(from_state, ())


def move_state(obj, to_state, transitions, **fields):
    """Set the row of `obj` (as read: its `state` is the expected one) to `to_state`, with
    `fields`, if no one moved it meanwhile; the object itself is left as read. Returns True when
    this call moved it; the caller decides whether a lost race is a refusal or a no-op. A
    transition `transitions` does not declare is a programming error (ValueError), never a
    silent write."""
    from_state = obj.state
    if not may_move(transitions, from_state, to_state):
        raise ValueError(f"a {from_state} {obj._meta.verbose_name} cannot become {to_state}")
    rows = type(obj)._default_manager.filter(pk=obj.pk, state=from_state)
    return rows.update(state=to_state, **fields) == 1
