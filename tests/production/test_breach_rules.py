"""Which windows breach (production.online.contract.breaches), from plain totals: a hard gate
breaches only when its Wilson interval lies wholly beyond the policy's limit with at least 30
in the denominator; a count limit the gate runs cannot scale is not judged."""

from evaluations.contract import VariantTotals, evaluate, parse_thresholds
from production.online.contract import breaches

POLICY = {
    "max_false_successes": 0,
    "max_unknown_effects": 0,
    "min_useful_progress": 0.9,
    "min_tool_effect_integrity": 0.95,
}


def result(**counts):
    return evaluate(VariantTotals(variant="v", **counts), parse_thresholds(POLICY))


def gate(**counts):
    return result(**counts)


def names(found):
    return sorted((b["gate"], b["measure"]) for b in found)


def test_one_false_success_in_thirty_breaches_a_policy_that_allows_none():
    found, _ = breaches(
        result(runs=30, declared_complete=30, false_successes=1),
        None,
        parse_thresholds(POLICY),
        "24 h",
    )
    assert names(found) == [("false_success", "false success")]
    assert found[0]["wilson95"][0] > 0 and found[0]["limit"] == 0


def test_fewer_than_thirty_is_not_enough_evidence():
    found, _ = breaches(
        result(runs=29, declared_complete=29, false_successes=29),
        None,
        parse_thresholds(POLICY),
        "24 h",
    )
    assert found == []


def test_a_count_limit_is_scaled_by_the_gate_runs():
    limits = parse_thresholds({**POLICY, "max_false_successes": 2})
    window = result(runs=40, declared_complete=40, false_successes=3)
    # 2 allowed in 100 gate completions tolerates 2 %: 3/40 (lower bound 2.6 %) breaches.
    found, _ = breaches(window, gate(runs=100, declared_complete=100), limits, "7 d")
    assert names(found) == [("false_success", "false success")]
    # 2 in 10 tolerates 20 %: not a breach.
    found, _ = breaches(window, gate(runs=10, declared_complete=10), limits, "7 d")
    assert found == []
    # No gate evidence to scale a limit above 0: not judged, and said so.
    found, unjudged = breaches(window, None, limits, "7 d")
    assert found == [] and "false success" in unjudged[0]


def test_floors_and_unknown_effects():
    window = result(
        runs=40,
        active_windows=40,
        windows_with_evidence_delta=20,
        effects_verified=30,
        effects_unknown=10,
    )
    found, _ = breaches(window, None, parse_thresholds(POLICY), "24 h")
    assert names(found) == [
        ("floors", "tool-effect integrity"),
        ("floors", "useful progress"),
        ("unknown_effects", "unknown effects"),
    ]
    upper = {b["measure"]: b for b in found}["useful progress"]
    assert upper["bound"] == "upper" and upper["value"] < 0.9
