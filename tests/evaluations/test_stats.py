"""The statistics a release gate will read, checked against a reference not written here
(statsmodels) on shared inputs, and by coverage simulations: 10,000 simulated datasets per
scenario, the true rate drawn across a range (near 0 and 1 included), and how often the nominal
95 % interval holds it. The measured coverage is asserted, not assumed."""

import math
import os

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from evaluations.stats import (
    INSUFFICIENT,
    SequentialGate,
    cases_to_decide,
    clustered_rate,
    decide_on_interval,
    paired_comparison,
    ppi_rate,
    wilson,
)

DATASETS = 10_000


@pytest.mark.parametrize(("k", "n"), [(0, 5), (1, 10), (27, 30), (30, 30), (2700, 3000), (3, 7)])
def test_wilson_is_statsmodels_wilson(k, n):
    ours = wilson(k, n)
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert ours.low == pytest.approx(low, abs=1e-12) and ours.high == pytest.approx(high, abs=1e-12)


def test_one_repetition_per_case_is_the_plain_wilson_interval():
    assert clustered_rate([1, 0, 1, 1], [1, 1, 1, 1]) == wilson(3, 4)


def test_repetitions_of_one_case_count_as_fewer_trials_than_they_are():
    # Every case passes all three repetitions or none: three times the trials, no more evidence.
    same = clustered_rate([3] * 27 + [0] * 3, [3] * 30)
    assert (same.rate, same.trials, same.cases) == (0.9, 90, 30)
    assert same.low == pytest.approx(clustered_rate([1] * 27 + [0] * 3, [1] * 30).low, abs=0.03)
    assert same.high - same.low > wilson(81, 90).high - wilson(81, 90).low


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 6), (5, 5), (2, 11), (30, 12)])
def test_mcnemar_is_statsmodels_exact_mcnemar(b, c):
    outcomes = [(True, True)] * 10 + [(True, False)] * b + [(False, True)] * c
    result = paired_comparison([x for x, _ in outcomes], [y for _, y in outcomes])
    table = [[10, b], [c, 0]]
    assert result.mcnemar_p == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-12)
    assert (result.only_candidate, result.only_live) == (b, c)


def test_an_interval_decides_a_gate_only_when_it_is_all_on_one_side():
    # 27 of 30 at 0.9: compatible with 0.74 as well as 0.97, so not decided either way.
    assert decide_on_interval(wilson(27, 30), 0.9) == INSUFFICIENT
    assert decide_on_interval(wilson(2790, 3000), 0.9) == "pass"
    assert decide_on_interval(wilson(2400, 3000), 0.9) == "fail"
    assert decide_on_interval(wilson(0, 200), 0.05, at_least=False) == "pass"
    assert decide_on_interval(wilson(1, 100), 0.05, at_least=False) == INSUFFICIENT


def test_the_cases_that_would_decide_give_the_power_asked():
    n = cases_to_decide(0.95, 0.9)
    alpha = 0.025
    critical = 0.9 + norm.ppf(1 - alpha) * math.sqrt(0.9 * 0.1 / n)
    power = 1 - norm.cdf((critical - 0.95) / math.sqrt(0.95 * 0.05 / n))
    assert power == pytest.approx(0.8, abs=0.01)
    assert cases_to_decide(0.92, 0.9) > n > cases_to_decide(0.99, 0.9)
    assert cases_to_decide(0.9, 0.9) is None


def coverage(draw):
    return sum(draw() for _ in range(DATASETS)) / DATASETS


@pytest.mark.parametrize(
    ("n", "low", "high"), [(10, 0.01, 0.2), (30, 0.85, 0.99), (100, 0.95, 0.999)]
)
def test_wilson_covers_at_its_nominal_level(n, low, high):
    rng = np.random.default_rng(n)

    def draw():
        p = rng.uniform(low, high)
        interval = wilson(int(rng.binomial(n, p)), n)
        return interval.low <= p <= interval.high

    assert 0.94 <= coverage(draw) <= 0.96


@pytest.mark.parametrize(
    ("cases", "repetitions", "low", "high", "band"),
    [
        (30, 3, 0.8, 0.95, (0.94, 0.96)),
        (20, 5, 0.3, 0.7, (0.94, 0.96)),
        # Ten cases estimate the spread between cases poorly: Student's quantile keeps the
        # interval on the safe side (measured 96.8 %), never below the nominal level.
        (10, 5, 0.5, 0.9, (0.95, 0.975)),
    ],
)
def test_the_clustered_interval_covers_with_the_case_as_the_unit(
    cases, repetitions, low, high, band
):
    rng = np.random.default_rng(cases * repetitions)

    def draw():
        p = rng.uniform(low, high)
        per_case = rng.beta(p * 5, (1 - p) * 5, size=cases)  # cases differ in difficulty
        passed = rng.binomial(repetitions, per_case)
        interval = clustered_rate([int(y) for y in passed], [repetitions] * cases)
        return interval.low <= p <= interval.high

    assert band[0] <= coverage(draw) <= band[1]


def _restricted_score(b, c, n, delta):
    """The score statistic of a paired difference `delta`, its nuisance rate fitted by
    maximising the multinomial likelihood numerically (scipy's bounded minimiser), not by
    Tango's closed form: an independent computation of what the interval inverts."""
    from scipy.optimize import minimize_scalar

    def minus_log_likelihood(q21):
        q12 = q21 + delta
        rest = 1 - q12 - q21
        if q12 <= 0 or rest <= 0:
            return math.inf
        return -(b * math.log(q12) + c * math.log(q21) + (n - b - c) * math.log(rest))

    q21 = minimize_scalar(
        minus_log_likelihood, bounds=(max(0, -delta) + 1e-12, (1 - delta) / 2 - 1e-12),
        method="bounded", options={"xatol": 1e-12},
    ).x  # fmt: skip
    return (b - c - n * delta) / math.sqrt(n * (2 * q21 + delta * (1 - delta)))


@pytest.mark.parametrize(("b", "c", "n"), [(1, 6, 20), (5, 0, 20), (7, 12, 60), (3, 3, 40)])
def test_the_paired_interval_is_where_the_score_test_stops_rejecting(b, c, n):
    outcomes = [(True, True)] * (n - b - c) + [(True, False)] * b + [(False, True)] * c
    paired = paired_comparison([x for x, _ in outcomes], [y for _, y in outcomes])
    z = norm.ppf(0.975)
    for bound, side in ((paired.low, z), (paired.high, -z)):
        if abs(bound) < 1:
            assert _restricted_score(b, c, n, bound) == pytest.approx(side, abs=1e-4)
    assert paired.low < paired.difference < paired.high


@pytest.mark.parametrize(
    ("n", "cells", "band"),
    [
        # Weakly correlated outcomes, many discordant cases: near the nominal level from 30.
        (30, (1, 1, 1, 1), (0.94, 0.96)),
        (50, (4, 1, 1, 4), (0.94, 0.96)),
        # Highly concordant runs with few discordant cases: a discrete test, on the safe side.
        (20, (8, 1, 1, 2), (0.95, 0.99)),
    ],
)
def test_the_paired_interval_covers_at_its_nominal_level_or_above(n, cells, band):
    rng = np.random.default_rng(n)

    def draw():
        probs = rng.dirichlet(cells)  # both, only candidate, only live, neither
        both, b, c, neither = (int(x) for x in rng.multinomial(n, probs))
        candidate = [True] * (both + b) + [False] * (c + neither)
        live = [True] * both + [False] * b + [True] * c + [False] * neither
        paired = paired_comparison(candidate, live)
        return paired.low <= probs[1] - probs[2] <= paired.high

    assert band[0] <= coverage(draw) <= band[1]


@pytest.mark.parametrize(("n", "big_n", "seed"), [(30, 300, 1), (100, 1000, 2), (12, 40, 3)])
def test_the_corrected_rate_is_ppi_pythons(n, big_n, seed):
    ppi_py = pytest.importorskip("ppi_py") if not os.environ.get("CI") else __import__("ppi_py")
    rng = np.random.default_rng(seed)
    truth = rng.binomial(1, 0.7, n)
    judged = np.where(rng.random(n) < 0.85, truth, 1 - truth)  # a judge right 85 % of the time
    rest = rng.binomial(1, 0.75, big_n)
    ours = ppi_rate(truth.astype(bool).tolist(), judged.astype(bool).tolist(), rest.tolist())
    low, high = ppi_py.ppi_mean_ci(truth, judged, rest, alpha=0.05)
    assert ours.rate == pytest.approx(ppi_py.ppi_mean_pointestimate(truth, judged, rest)[0])
    # The interval holds ppi-python's, a little wider on few labels (the pseudo-labels).
    assert ours.low <= max(0.0, low[0]) + 1e-9 and ours.high >= min(1.0, high[0]) - 1e-9
    assert ours.high - ours.low <= 1.5 * (min(1.0, high[0]) - max(0.0, low[0]))


def test_with_many_labels_the_interval_is_ppi_pythons():
    ppi_py = pytest.importorskip("ppi_py") if not os.environ.get("CI") else __import__("ppi_py")
    rng = np.random.default_rng(4)
    truth = rng.binomial(1, 0.6, 5000)
    judged = np.where(rng.random(5000) < 0.8, truth, 1 - truth)
    rest = rng.binomial(1, 0.62, 50000)
    ours = ppi_rate(truth.astype(bool).tolist(), judged.astype(bool).tolist(), rest.tolist())
    low, high = ppi_py.ppi_mean_ci(truth, judged, rest, alpha=0.05)
    assert (ours.low, ours.high) == pytest.approx((low[0], high[0]), abs=1e-4)


def lenient(truth, rng):
    """A judge that passes a fifth of what people fail."""
    return truth | (rng.random(len(truth)) < 0.2)


def noisy(truth, rng):
    """A judge wrong on 15 % of the results, either way."""
    return np.where(rng.random(len(truth)) < 0.85, truth, ~truth)


@pytest.mark.parametrize(
    ("labelled", "results", "rates", "judge", "band"),
    [
        (60, 600, (0.5, 0.9), lenient, (0.94, 0.96)),
        (150, 1500, (0.5, 0.9), lenient, (0.94, 0.96)),
        (30, 300, (0.5, 0.9), noisy, (0.94, 0.97)),
        (60, 600, (0.01, 0.1), noisy, (0.94, 0.99)),
        (100, 1000, (0.9, 0.99), noisy, (0.94, 0.97)),
        # Near 1 with a lenient judge the few disagreements make it cautious: above its level.
        (60, 600, (0.9, 0.99), lenient, (0.95, 0.99)),
    ],
)
def test_the_corrected_rate_covers_where_the_judge_alone_does_not(
    labelled, results, rates, judge, band
):
    """A judge that errs: its own rate's interval misses the true rate almost always; PPI++
    with a random sample of labels covers it at its level, from 30 labels and near 0 and 1."""
    rng = np.random.default_rng(labelled)
    corrected = judge_only = 0
    for _ in range(DATASETS):
        p = rng.uniform(*rates)
        truth = rng.random(results) < p
        judged = judge(truth, rng)
        sample = rng.permutation(results)[:labelled]
        rest = np.setdiff1d(np.arange(results), sample)
        found = ppi_rate(truth[sample].tolist(), judged[sample].tolist(), judged[rest].tolist())
        corrected += found.low <= p <= found.high
        alone = wilson(int(judged.sum()), results)
        judge_only += alone.low <= p <= alone.high
    assert band[0] <= corrected / DATASETS <= band[1]
    assert judge_only / DATASETS < corrected / DATASETS - 0.1


def test_the_sequential_gate_errs_at_most_its_level_however_often_it_looks():
    """On the threshold itself (the hardest case), 10,000 runs of 300 cases, decided after
    every case: wrong at most α/2 each way; a Wilson interval read after every case, far more."""
    rng = np.random.default_rng(9)
    outcomes = rng.random((DATASETS, 300)) < 0.9
    passed = failed = 0
    for row in outcomes:
        gate = SequentialGate(0.9)
        for outcome in row:
            if gate.add(bool(outcome)) != INSUFFICIENT:
                break
        passed += gate.decision == "pass"
        failed += gate.decision == "fail"
    assert passed / DATASETS <= 0.025 and failed / DATASETS <= 0.025
    # The fixed-sample interval looked at after every case (from the 30th): z = 1.96.
    seen = np.arange(1, 301)
    rate = outcomes.cumsum(axis=1) / seen
    z = 1.96
    centre = (rate + z * z / (2 * seen)) / (1 + z * z / seen)
    half = z / (1 + z * z / seen) * np.sqrt(rate * (1 - rate) / seen + z * z / (4 * seen**2))
    decided = ((centre - half >= 0.9) | (centre + half < 0.9))[:, 29:].any(axis=1)
    assert decided.mean() > 3 * (passed + failed) / DATASETS


def test_a_clear_answer_stops_early_and_never_changes():
    gate = SequentialGate(0.9)
    for _ in range(200):
        gate.add(True)
    assert gate.decision == "pass" and gate.seen < 100
    assert gate.add(False) == "pass" and gate.seen < 100  # decided: later cases change nothing
    losing = SequentialGate(0.9)
    for n in range(300):
        losing.add(n % 2 == 0)
    assert losing.decision == "fail" and losing.seen < 60


def test_the_paired_rule_in_seed_order_errs_at_most_its_level_at_the_margin():
    """A candidate exactly `margin` worse than live (the hardest case for non-inferiority),
    10,000 runs of 300 paired cases read in order: passed at most α/2 of the time."""
    from evaluations.verdict.sequential import Step, decide_pairs

    rng = np.random.default_rng(11)
    margin = 0.05
    # Per case: passed only on the candidate (5 %), only on live (10 %), in both (85 %): the
    # candidate's rate is live's minus 0.05.
    only_candidate, only_live = 0, 1
    draws = rng.choice(3, size=(DATASETS, 300), p=[0.05, 0.1, 0.85])
    passed = 0
    for row in draws:
        steps = [
            Step(n, f"c{n}", "failed" if d == only_live else "passed") for n, d in enumerate(row)
        ]
        live = {f"c{n}": d != only_candidate for n, d in enumerate(row)}
        passed += decide_pairs(steps, live, margin, 0.95).decision == "pass"
    assert passed / DATASETS <= 0.025
