"""A gate decided on an interval: it passes when the whole interval clears its threshold,
fails when the whole interval misses it, and otherwise has insufficient evidence."""

from evaluations.stats.intervals import Interval

PASS, FAIL, INSUFFICIENT = "pass", "fail", "insufficient"


def decide_on_interval(interval: Interval, threshold: float, *, at_least: bool = True) -> str:
    """`pass`, `fail` or `insufficient` for a rate that must be at least (or, `at_least`
    False, at most) `threshold`."""
    low, high = interval.low, interval.high
    if not at_least:
        low, high, threshold = -high, -low, -threshold
    if low >= threshold:
        return PASS
    if high < threshold:
        return FAIL
    return INSUFFICIENT
