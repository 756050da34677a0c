"""A model check's pass rate corrected for its judge's error by human labels: prediction-powered
inference, power-tuned (PPI++, Angelopoulos, Duchi and Zrnic 2023). The judge's verdicts on
every result are cheap and biased; a random sample of them labelled by people is unbiased and
small. PPI++ estimates the rate as the judge's rate on all results plus the labels' correction
of it on the sample, the judge's weight λ chosen to make the interval shortest (λ = 0: the
labels alone; λ = 1: plain PPI). The estimate is the `ppi-python` package's (the suite checks
it). Its normal interval is optimistic with few labels when the judge is rarely wrong: the
labels' correction then rests on a few disagreements, and their spread is underestimated as a
rare rate's is (89 % coverage with 60 labels in the suite's simulation, 73 % near a rate of 1).
So the correction's variance is estimated with one pseudo-label in each of the four cells of
(person, judge) outcomes, Agresti and Caffo's "two successes and two failures" (The American
Statistician 54, 2000): 95 % with 60 labels, at or above 94 % from 30 labels to rates near 0
and 1 in the suite's simulations; with many labels it is ppi-python's interval."""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm


@dataclass(frozen=True)
class Corrected:
    """The corrected rate and its interval, beside the judge-only rate (all results) and the
    labels-only rate (the sample); `weight` is λ, `labelled` n and `unlabelled` N."""

    rate: float
    low: float
    high: float
    confidence: float
    weight: float
    labelled: int
    unlabelled: int
    judge_rate: float
    labels_rate: float


def ppi_rate(
    labels: Sequence[bool],
    judged_labelled: Sequence[bool],
    judged_unlabelled: Sequence[bool],
    confidence: float = 0.95,
) -> Corrected:
    """PPI++'s estimate of a pass rate: ``labels`` the people's verdicts on a random sample,
    ``judged_labelled`` the judge's on the same results (same order), ``judged_unlabelled``
    the judge's on the rest. The interval is clipped to [0, 1]."""
    y = np.asarray(labels, dtype=float)
    f = np.asarray(judged_labelled, dtype=float)
    g = np.asarray(judged_unlabelled, dtype=float)
    n, big_n = len(y), len(g)
    if n < 2 or n != len(f) or big_n < 1:
        raise ValueError("two labelled results at least, each judged, and one unlabelled")
    # The weight that minimises the variance (the paper's λ for a mean), clipped to [0, 1].
    spread = float(np.concatenate([f, g]).var(ddof=1))
    covariance = float(((y - y.mean()) * (f - f.mean())).mean())
    weight = min(1.0, max(0.0, covariance / ((1 + n / big_n) * spread))) if spread else 0.0
    rectified = y - weight * f
    rate = float(weight * g.mean() + rectified.mean())
    # The correction's spread over the labels plus one pseudo-label per (person, judge) cell.
    cells = np.array([0.0, 1.0, -weight, 1 - weight])  # y - λf for (0,0), (1,0), (0,1), (1,1)
    smoothed = np.concatenate([rectified, cells])
    error = math.sqrt(weight * weight * g.var() / big_n + smoothed.var() / n)
    z = float(norm.ppf(0.5 + confidence / 2))
    return Corrected(
        rate=rate,
        low=max(0.0, rate - z * error),
        high=min(1.0, rate + z * error),
        confidence=confidence,
        weight=weight,
        labelled=n,
        unlabelled=big_n,
        judge_rate=float(np.concatenate([f, g]).mean()),
        labels_rate=float(y.mean()),
    )
