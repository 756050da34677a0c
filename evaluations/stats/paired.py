"""A candidate against the live version on the same cases: per case both outcomes; the
difference in pass rate with Tango's score interval for paired proportions (1998: the
differences the score test at the restricted maximum likelihood does not reject, found with
scipy's root finder), and McNemar's exact test on the discordant cases (a binomial test of one
kind of discordance among both). Newcombe's hybrid interval held its level only from about 50
cases when the outcomes are weakly correlated (92 % at 20); Tango's never fell below it in the
suite's simulations."""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.optimize import brentq
from scipy.stats import binomtest, norm


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


def tango_interval(
    only_candidate: int, only_live: int, n: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Tango's score interval of the difference of two paired pass rates (candidate minus
    live) from the discordant counts and the number of cases."""
    b, c = only_candidate, only_live
    z = float(norm.ppf(0.5 + confidence / 2))

    def score(delta: float) -> float:
        # The score statistic at `delta`, with the restricted estimate of the live-only rate.
        a2, b2 = 2 * n, -b - c + (2 * n - b + c) * delta
        c2 = -c * delta * (1 - delta)
        q = (math.sqrt(max(b2 * b2 - 4 * a2 * c2, 0.0)) - b2) / (2 * a2)
        spread = n * (2 * q + delta * (1 - delta))
        gap = b - c - n * delta
        if spread <= 0:
            return math.copysign(math.inf, gap) if gap else 0.0
        return gap / math.sqrt(spread)

    estimate, edge = (b - c) / n, 1e-12
    low = -1.0 if score(-1 + edge) <= z else brentq(lambda d: score(d) - z, -1 + edge, estimate)
    high = 1.0 if score(1 - edge) >= -z else brentq(lambda d: score(d) + z, estimate, 1 - edge)
    return float(low), float(high)


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
    low, high = tango_interval(b, c, n, confidence)
    mcnemar = binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
    return Paired(
        cases=n,
        both=a,
        only_candidate=b,
        only_live=c,
        neither=n - a - b - c,
        difference=(b - c) / n,
        low=low,
        high=high,
        confidence=confidence,
        mcnemar_p=float(mcnemar),
    )
