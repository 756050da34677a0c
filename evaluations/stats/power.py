"""How many cases would most likely decide a gate the interval leaves undecided: the sample size
at which a one-sided test of the threshold, at the observed rate, has the power asked (0.8),
at the level of one side of the gate's two-sided interval."""

import math

from scipy.stats import norm


def cases_to_decide(
    rate: float, threshold: float, confidence: float = 0.95, power: float = 0.8
) -> int | None:
    """The number of cases (in all) that would most likely decide whether `rate` clears
    `threshold`; None when the rate is the threshold (no number of cases decides it)."""
    if not 0 < threshold < 1 or rate == threshold:
        return None
    alpha = (1 - confidence) / 2
    z_alpha, z_power = float(norm.ppf(1 - alpha)), float(norm.ppf(power))
    rate = min(max(rate, 1e-9), 1 - 1e-9)
    spread = z_alpha * math.sqrt(threshold * (1 - threshold)) + z_power * math.sqrt(
        rate * (1 - rate)
    )
    return math.ceil((spread / (rate - threshold)) ** 2)
