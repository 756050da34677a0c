"""Numbers with bounds: every figure that comes from outside has a documented range, checked
where it enters (docs/api.md, "Numbers").

A cost, a token count or a latency comes from a team's task (the client's uploads), an agent's
answer (the `http` and `openai_chat` adapters), a judge's usage, a tracer's spans, an imported
file or a form. Each is one of the ranges below; outside it the item is refused (400 naming the
field) or marked invalid alone, with its reason (an upload item, a trial, a trace). The ranges
leave the columns room: a cost line holds up to $999,999.99999999 and one item may bring at most
$100,000, so a cost priced from the largest token count at the largest price still fits; totals
(a run's spend, a day's) are `MoneyField(total=True)`, 24 digits, so ten million items at the
bound still sum inside their column.

Plain Python (the check library reads these ranges and imports no Django); the money columns
are `sherlock.core.fields.MoneyField`. `is_out_of_range` lets a page say that a value stored
before these bounds lies outside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class Range:
    """A closed range ``low..high`` of ``unit``; ``integer`` ranges take whole numbers only."""

    unit: str
    high: int | Decimal
    low: int | Decimal = 0
    integer: bool = False

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not a number in this range (a sentence), or None when it is one."""
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            kind = "an integer" if self.integer else "a number"
            return f"must be {kind} from {self.low:,} to {self.high:,} {self.unit}"
        if isinstance(value, float | Decimal) and not _finite(value):
            return f"must be a finite number from {self.low:,} to {self.high:,} {self.unit}"
        if self.integer and value != int(value):
            return f"must be a whole number of {self.unit}"
        if not self.low <= value <= self.high:
            return f"must be from {self.low:,} to {self.high:,} {self.unit} (got {_short(value)})"
        return None

    def check(self, value: Any, field: str) -> Any:
        """``value`` when it is in range; ValueError("<field>: <problem>") otherwise."""
        problem = self.problem(value)
        if problem:
            raise ValueError(f"{field}: {problem}")
        return value

    def validators(self) -> list[Any]:
        """Django validators for a model or form field of this range."""
        # Imported here: the check library reads these ranges and imports no Django.
        from django.core.validators import MaxValueValidator, MinValueValidator

        return [MinValueValidator(self.low), MaxValueValidator(self.high)]

    def bounds(self) -> dict[str, int | Decimal]:
        """``min_value``/``max_value`` keyword arguments for a form or serializer field."""
        return {"min_value": self.low, "max_value": self.high}


def _finite(value: Any) -> bool:
    return value.is_finite() if isinstance(value, Decimal) else math.isfinite(value)


def _short(value: Any) -> str:
    text = f"{value:,}" if _finite(value) else str(value)
    return text if len(text) <= 40 else f"{text[:40]}..."


# One call, one trial, one trace, one cost line: what an agent, a judge or a task may report.
USD = Range("US dollars", Decimal(100_000))
# A sum of items (a run's spend, a day's, a difference of two): what a total column holds.
TOTAL = Range("US dollars", Decimal(10**15), low=Decimal(-(10**15)))
# A model's price, per million tokens (input or output).
PRICE_PER_MILLION = Range("US dollars per million tokens", Decimal(1_000))
# Tokens of one call, trial or trace (prompt and completion each).
TOKENS = Range("tokens", 50_000_000, integer=True)
# A latency or a duration: one day.
LATENCY_MS = Range("milliseconds", 86_400_000)
# A score or a rate.
UNIT = Range("", 1)
# What an adapter counts (windows of progress, tool effects) in one trial.
COUNT = Range("", 1_000_000, integer=True)

ITEM_DIGITS = 14  # < $1,000,000: one item, with room for a priced cost at the bounds
TOTAL_DIGITS = 24  # < $10,000,000,000,000,000: a sum of items
DECIMAL_PLACES = 8


def is_out_of_range(amount: Any, bound: Range = USD) -> bool:
    """Whether a stored figure lies outside ``bound`` (written before the bounds were checked):
    pages show it with "out of range" beside it rather than as a real cost."""
    if isinstance(amount, bool) or not isinstance(amount, int | float | Decimal):
        return False
    return bound.problem(amount) is not None
