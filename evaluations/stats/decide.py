"""A gate decided on an interval: it passes when the whole interval clears its threshold,
fails when the whole interval misses it, and otherwise has insufficient evidence."""

from typing import Protocol

PASS, FAIL, INSUFFICIENT = "pass", "fail", "insufficient"
# How a detail says what the interval did to the threshold, by decision.
VERBS = {PASS: "clears", FAIL: "misses", INSUFFICIENT: "straddles"}


class Bounds(Protocol):
    """An interval: a rate's (`Interval`) or a paired difference's (`Paired`)."""

    @property
    def low(self) -> float: ...

    @property
    def high(self) -> float: ...


def decide_on_interval(interval: Bounds, threshold: float, *, at_least: bool = True) -> str:
    """`pass`, `fail` or `insufficient` for a value that must be at least (or, `at_least`
    False, at most) `threshold`."""
    low, high = interval.low, interval.high
    if not at_least:
        low, high, threshold = -high, -low, -threshold
    if low >= threshold:
        return PASS
    if high < threshold:
        return FAIL
    return INSUFFICIENT
