"""Values on their way into and out of JSON: what a message calls a value's JSON type, and a
Decimal written as the exact string it is (a decision snapshot and a verdict keep money and
ratios exact, never as a float)."""

from collections.abc import Mapping
from decimal import Decimal
from typing import Any


def json_type(value: Any) -> str:
    """A value's JSON type in words, for a message ("must be an object, not an array")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float | Decimal):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


def exact(value: Any) -> Any:
    """`value`, a Decimal written as its exact string."""
    return str(value) if isinstance(value, Decimal) else value
