"""Intervals for a pass rate.

`wilson`: the score interval of a binomial proportion (scipy's `binomtest(...).proportion_ci`),
right for one outcome per case. `clustered_rate`: a pass rate over repetitions of cases, where
the case is the unit: the repetitions of one case share its difficulty, so they count as fewer
independent trials than they are. Its variance is the cluster-robust one (each case's residual
summed), turned into an effective number of trials (`n / design effect`) and read through the
Wilson interval, which stays inside [0, 1] and behaves near 0 and 1 where a Wald interval does
not.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binomtest, norm
from scipy.stats import t as student


@dataclass(frozen=True)
class Interval:
    """A rate, its two-sided interval at `confidence`, and the trials and cases behind it."""

    rate: float
    low: float
    high: float
    confidence: float
    trials: int
    cases: int


def _wilson_bounds(
    rate: float, n: float, confidence: float, df: int | None = None
) -> tuple[float, float]:
    """The Wilson interval of `rate` over `n` (possibly fractional, an effective) trials; with
    `df`, Student's quantile instead of the normal one (few cases estimate the variance)."""
    q = 0.5 + confidence / 2
    z = float(norm.ppf(q) if df is None else student.ppf(q, df))
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * ((rate * (1 - rate) / n + z * z / (4 * n * n)) ** 0.5)
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """The Wilson score interval of `successes` out of `n` independent cases."""
    if n <= 0:
        raise ValueError("no case to estimate a rate from")
    ci = binomtest(successes, n).proportion_ci(confidence, method="wilson")
    return Interval(successes / n, float(ci.low), float(ci.high), confidence, n, n)


def wilson_weighed(successes: int, n: int, repetitions: int, confidence: float = 0.95) -> Interval:
    """The Wilson interval of `successes` out of `n` trials made of cases run `repetitions`
    times each, when only the totals are known: each case's trials weigh as one (the most
    cautious reading of repetitions that may agree entirely). `wilson` with one repetition."""
    if repetitions <= 1:
        return wilson(successes, n, confidence)
    if n <= 0:
        raise ValueError("no case to estimate a rate from")
    rate = successes / n
    low, high = _wilson_bounds(rate, n / repetitions, confidence)
    return Interval(rate, low, high, confidence, n, max(1, round(n / repetitions)))


def clustered_rate(
    passed: Sequence[int], trials: Sequence[int], confidence: float = 0.95
) -> Interval:
    """The pass rate of trials grouped by case (`passed[i]` of `trials[i]` repetitions of case
    i), with the case as the unit: a cluster-robust variance, its design effect, and the Wilson
    interval at the effective number of trials. With one repetition per case it is `wilson`."""
    cases = len(trials)
    total = sum(trials)
    if cases == 0 or total == 0:
        raise ValueError("no trial to estimate a rate from")
    if all(m == 1 for m in trials):
        return wilson(sum(passed), total, confidence)
    rate = sum(passed) / total
    if cases == 1 or rate in (0.0, 1.0):
        # No spread between cases to measure: as few independent trials as there are cases.
        effective = float(cases)
    else:
        residuals = sum((y - rate * m) ** 2 for y, m in zip(passed, trials, strict=True))
        variance = cases / (cases - 1) * residuals / (total * total)
        binomial = rate * (1 - rate) / total
        # Never more independent than the trials, never fewer than the cases.
        effective = min(float(total), max(float(cases), total * binomial / variance))
    low, high = _wilson_bounds(rate, effective, confidence, df=cases - 1 if cases > 1 else None)
    return Interval(rate, low, high, confidence, total, cases)
