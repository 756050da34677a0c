"""A candidate against the live version on the same cases: per case both outcomes; the
difference in pass rate with Newcombe's hybrid score interval for paired proportions (his
method 10, built from the two Wilson intervals and the outcomes' correlation), and McNemar's
exact test on the discordant cases (a binomial test of one kind of discordance among both)."""

from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binomtest

from evaluations.stats.intervals import wilson


@dataclass(frozen=True)
class Paired:
    """`both`, `only_candidate`, `only_live` and `neither` passed, of `cases`; the difference
    of the pass rates (candidate minus live), its interval, and McNemar's exact p-value."""

    cases: int
    both: int
    only_candidate: int
    only_live: int
    neither: int
    difference: float
    low: float
    high: float
    confidence: float
    mcnemar_p: float


def paired_comparison(
    candidate: Sequence[bool], live: Sequence[bool], confidence: float = 0.95
) -> Paired:
    """The paired comparison of two runs' case outcomes, case by case (same order)."""
    if len(candidate) != len(live) or not candidate:
        raise ValueError("the two runs must have the same cases, at least one")
    n = len(candidate)
    a = sum(1 for x, y in zip(candidate, live, strict=True) if x and y)
    b = sum(1 for x, y in zip(candidate, live, strict=True) if x and not y)
    c = sum(1 for x, y in zip(candidate, live, strict=True) if y and not x)
    d = n - a - b - c
    p1, p2 = (a + b) / n, (a + c) / n
    one, two = wilson(a + b, n, confidence), wilson(a + c, n, confidence)
    spread = ((a + b) * (c + d) * (a + c) * (b + d)) ** 0.5
    phi = (a * d - b * c) / spread if spread else 0.0
    lower = ((p1 - one.low) ** 2 - 2 * phi * (p1 - one.low) * (two.high - p2)
             + (two.high - p2) ** 2)  # fmt: skip
    upper = ((p2 - two.low) ** 2 - 2 * phi * (p2 - two.low) * (one.high - p1)
             + (one.high - p1) ** 2)  # fmt: skip
    difference = p1 - p2
    mcnemar = binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
    return Paired(
        cases=n,
        both=a,
        only_candidate=b,
        only_live=c,
        neither=d,
        difference=difference,
        low=max(-1.0, difference - max(lower, 0.0) ** 0.5),
        high=min(1.0, difference + max(upper, 0.0) ** 0.5),
        confidence=confidence,
        mcnemar_p=float(mcnemar),
    )
