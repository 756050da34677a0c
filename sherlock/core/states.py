"""Moving a row from one state to the next by compare-and-set.

Each app declares a `StateMachine` per stateful model once, in its `choices.py` (the field and
its allowed transitions), and every change of that field after creation goes through the
machine's `move`, so a state changes in one place, along a declared edge, and never twice.
`tests/test_state_writers.py` reads the source and fails if any other code writes one of these
fields.
"""

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StateMachine:
    """The state field `field` of one model (named `model`, its class name) and the states each
    state may become (`transitions`: state -> the states it may become)."""

    model: str
    field: str
    transitions: dict[Any, set[Any]]

    def may_move(self, from_state: Any, to_state: Any) -> bool:
        """Whether the declared transitions allow this move."""
        return to_state in self.transitions.get(from_state, ())

    def sources(self, to_state: Any) -> list[Any]:
        """The states from which `to_state` may be reached."""
        return [state for state, targets in self.transitions.items() if to_state in targets]

    def move(self, obj: Any, to_state: Any, **fields: Any) -> bool:
        """Set the row of `obj` (as read: its state field holds the expected state) to
        `to_state`, with `fields`, if no one moved it meanwhile; the object itself is left as
        read. Returns True when this call moved it; the caller decides whether a lost race is a
        refusal or a no-op. A transition not declared is a programming error (ValueError),
        never a silent write."""
        from_state = getattr(obj, self.field)
        if not self.may_move(from_state, to_state):
            raise ValueError(f"a {from_state} {obj._meta.verbose_name} cannot become {to_state}")
        rows = type(obj)._default_manager.filter(pk=obj.pk, **{self.field: from_state})
        return bool(rows.update(**{self.field: to_state}, **fields) == 1)
