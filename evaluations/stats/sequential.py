"""Deciding a pass rate while the cases come in, valid however often it is looked at: testing
by betting (Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting",
JRSS B 86, 2024; the confidence sequences of Howard, Ramdas, McAuliffe and Sekhon, Annals of
Statistics 49, 2021). Two gamblers bet on each case's outcome x in {0, 1} against the
threshold m: one that the rate is above it, K ← K · (1 + λ(x − m)), one that it is below,
K' ← K' · (1 − λ'(x − m)). Each wealth is a nonnegative supermartingale while its side is
wrong, so by Ville's inequality it reaches 2/α with probability at most α/2, at any case,
ever: the gate passes when the first does, fails when the second does, and otherwise goes on.
The bets are the predictable plug-in λ = sqrt(2 log(2/α) / (σ̂² t log(1 + t))), capped at half
of what keeps the wealth positive. A fixed-sample interval read after every case would not
hold: it is wrong far more often than its level once looked at many times."""

import math
from dataclasses import dataclass

from evaluations.stats.decide import FAIL, INSUFFICIENT, PASS


@dataclass
class SequentialGate:
    """One mean tested case by case against `threshold`: `add` each outcome (a case passed or
    not, or any value in [0, 1]: the paired gate adds a pair's difference, shifted), read
    `decision` (`pass`, `fail`, or `insufficient` while undecided; once decided it stays)."""

    threshold: float
    confidence: float = 0.95
    seen: int = 0
    passed: float = 0  # the sum of the outcomes
    decision: str = INSUFFICIENT
    _above: float = 1.0  # the wealth of the bet that the rate is above the threshold
    _below: float = 1.0
    _sum: float = 0.5  # running estimates of the mean and variance (a prior of one half)
    _squares: float = 0.25

    def add(self, outcome: float) -> str:
        """Count one case's outcome (in [0, 1]) and return the decision so far."""
        if self.decision != INSUFFICIENT:
            return self.decision
        x, m, t = float(outcome), self.threshold, self.seen + 1
        alpha = (1 - self.confidence) / 2
        mean, variance = self._sum / t, self._squares / t
        bet = math.sqrt(2 * math.log(1 / alpha) / (variance * t * math.log(1 + t)))
        self._above *= 1 + min(bet, 0.5 / m) * (x - m)
        self._below *= 1 - min(bet, 0.5 / (1 - m)) * (x - m)
        self._squares += (x - mean) ** 2
        self._sum += x
        self.seen, self.passed = t, self.passed + x
        if self._above >= 1 / alpha:
            self.decision = PASS
        elif self._below >= 1 / alpha:
            self.decision = FAIL
        return self.decision
