"""The five-metric release contract: one test per rule.

Pure computation: no database. Each test builds a few trial records that differ from a clean,
passing trial only in what the rule is about.
"""

import copy
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

from evaluations.contract import (
    DEFAULT_THRESHOLDS,
    THRESHOLD_FIELDS,
    ContractInputError,
    Thresholds,
    ThresholdsError,
    TrialRecordError,
    VariantTotals,
    accumulate,
    compute_contract,
    evaluate,
    format_cells,
    load_document,
    parse_thresholds,
    render_table,
    round_half_up,
    wilson_interval,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "seed_table_trials.json"

POLICY = {
    "max_false_successes": 0,
    "max_unknown_effects": 0,
    "min_useful_progress": 0.9,
    "min_tool_effect_integrity": 0.95,
    "max_cost_per_verified_outcome_usd": Decimal("0.60"),
    "min_quality": None,
    "coverage_required": True,
    "requires_verified_outcomes": False,
}

OWNED_WAIT = {
    "owner": "billing-approver (role)",
    "decision_requested": "approve $250 credit",
    "decision": "pending",
    "deadline": "2026-03-02T17:00:00Z",
    "resumable": True,
}

_counter = iter(range(1, 1_000_000))


def make_trial(**overrides):
    """A clean trial that passes every gate; `overrides` replace top-level fields."""
    record = {
        "trial_id": f"t-{next(_counter)}",
        "variant": "candidate",
        "task": "T1 refund: refund $40 on order A-1001",
        "declared_complete": True,
        "outcome": {"verdict": "verified", "verifier": "ledger row exists"},
        "quality": {"grader_ran": True, "score": 0.8, "grader": "rubric@v1"},
        "progress": {
            "active_windows": 2,
            "windows_with_evidence_delta": 2,
            "excluded_wait_windows": 0,
            "stale_collector_windows": 0,
        },
        "wait": None,
        "tool_effects": [
            {"call": "refunds.create", "state": "verified", "intentionally_denied": False}
        ],
        "cost": {"usd": 0.10, "billing_coverage": "billed"},
    }
    record.update(overrides)
    return record


def progress(active, delta, wait_windows=0, stale=0):
    return {
        "active_windows": active,
        "windows_with_evidence_delta": delta,
        "excluded_wait_windows": wait_windows,
        "stale_collector_windows": stale,
    }


def effect(state, denied=False):
    return {"call": "tool.call", "state": state, "intentionally_denied": denied}


def contract(*trials, thresholds=POLICY):
    """The contract of one variant."""
    (result,) = compute_contract(trials, thresholds)
    return result


def gates(result):
    return {gate.name: gate.status for gate in result.gates}


# --- The worked example ------------------------------------------------------------------------


def test_seed_fixture_reproduces_the_published_numbers():
    document = load_document(FIXTURE.read_text())
    stable, fast = compute_contract(document.trials, document.thresholds)

    assert stable.as_dict()["quality"] == {"mean": 0.818, "graded": 4, "declared": 4}
    assert (stable.useful_progress.num, stable.useful_progress.den) == (14, 14)
    assert stable.excluded_wait_windows == 4
    assert stable.cost_per_run_usd == Decimal("0.41")
    assert stable.cost_per_verified_outcome_usd == Decimal("0.52")
    assert stable.release == "pass"

    assert fast.quality_mean == Decimal("0.902")
    assert (fast.useful_progress.num, fast.useful_progress.den) == (15, 16)
    assert (fast.tool_effect_integrity.num, fast.tool_effect_integrity.den) == (4, 5)
    assert fast.cost_per_run_usd == Decimal("0.38")
    assert fast.cost_per_verified_outcome_usd == Decimal("0.63")
    assert fast.first_failing_gate == "false_success"


def test_evaluate_gives_the_same_result_from_totals_built_by_database_aggregates():
    # What the platform will fill from Count/Sum over Trial rows for "stable v1".
    totals = VariantTotals(
        variant="stable v1",
        runs=5,
        declared_complete=4,
        outcomes_verified=4,
        unverified_completions=0,
        graded=4,
        quality_sum=Decimal("3.272"),
        windows_with_evidence_delta=14,
        active_windows=14,
        excluded_wait_windows=4,
        effects_verified=5,
        effects_denied=1,
        billed_runs=5,
        billed_usd=Decimal("2.07"),
    )
    document = load_document(FIXTURE.read_text())
    from_records = compute_contract(document.trials, document.thresholds)[0]

    assert evaluate(totals, parse_thresholds(POLICY)).as_dict() == from_records.as_dict()


# --- Useful progress ---------------------------------------------------------------------------


def test_owned_wait_windows_are_excluded_from_useful_progress():
    result = contract(make_trial(progress=progress(2, 2, wait_windows=4), wait=OWNED_WAIT))

    assert (result.useful_progress.num, result.useful_progress.den) == (2, 2)
    assert result.excluded_wait_windows == 4
    assert result.stalled_wait_windows == 0
    assert gates(result)["floors"] == "pass"


@pytest.mark.parametrize("missing", ["owner", "decision_requested", "deadline", "resumable"])
def test_unowned_wait_is_a_stall_whose_windows_count_as_active_with_no_delta(missing):
    wait = {key: value for key, value in OWNED_WAIT.items() if key != missing}
    result = contract(make_trial(progress=progress(2, 2, wait_windows=4), wait=wait))

    assert (result.useful_progress.num, result.useful_progress.den) == (2, 6)
    assert result.excluded_wait_windows == 0
    assert result.stalled_wait_windows == 4
    assert gates(result)["floors"] == "fail"


def test_wait_windows_without_any_wait_are_a_stall():
    result = contract(make_trial(progress=progress(3, 3, wait_windows=1), wait=None))

    assert (result.useful_progress.num, result.useful_progress.den) == (3, 4)
    assert result.excluded_wait_windows == 0


def test_a_wait_that_cannot_resume_is_still_owned_when_it_says_so():
    wait = {**OWNED_WAIT, "resumable": False}
    result = contract(make_trial(progress=progress(2, 2, wait_windows=4), wait=wait))

    assert result.useful_progress.den == 2
    assert result.excluded_wait_windows == 4


def test_stale_collector_windows_are_kept_apart_from_useful_progress():
    result = contract(make_trial(progress=progress(4, 4, stale=3)))

    assert (result.useful_progress.num, result.useful_progress.den) == (4, 4)
    assert result.stale_collector_windows == 3


# --- Tool-effect integrity ---------------------------------------------------------------------


def test_intentionally_denied_calls_are_excluded_from_integrity_and_shown_apart():
    denied = [effect("verified", denied=True), effect("failed", denied=True)]
    result = contract(make_trial(tool_effects=[effect("verified"), *denied]))

    assert (result.tool_effect_integrity.num, result.tool_effect_integrity.den) == (1, 1)
    assert result.as_dict()["tool_effects"] == {
        "verified": 1,
        "failed": 0,
        "unknown": 0,
        "den": 1,
        "intentionally_denied": 2,
    }
    assert result.release == "pass"


def test_failed_and_unknown_effects_count_in_the_integrity_denominator():
    result = contract(
        make_trial(tool_effects=[effect("verified"), effect("failed"), effect("unknown")])
    )

    assert (result.tool_effect_integrity.num, result.tool_effect_integrity.den) == (1, 3)
    assert gates(result)["unknown_effects"] == "fail"


def test_a_floor_is_compared_exactly_and_fails_below_its_minimum():
    nine_of_ten = [make_trial(progress=progress(10, 9))]
    four_of_five = [
        make_trial(tool_effects=[effect("verified")] * 4 + [effect("failed")]),
    ]

    assert gates(contract(*nine_of_ten))["floors"] == "pass"  # 0.9 >= 0.9
    result = contract(*four_of_five)  # 0.8 < 0.95
    assert gates(result)["floors"] == "fail"
    assert dict(result.gate("floors").parts) == {
        "useful_progress": "pass",
        "tool_effect_integrity": "fail",
    }


def test_empty_floor_denominator_does_not_apply_is_shown_as_na_and_passes():
    result = contract(make_trial(progress=progress(0, 0), tool_effects=[]))

    floors = result.gate("floors")
    assert floors.status == "pass"
    assert dict(floors.parts) == {"useful_progress": "n/a", "tool_effect_integrity": "n/a"}
    cells = format_cells(result)
    assert cells["useful progress"] == "0/0 (n/a)"
    assert cells["verified tool effects"] == "0/0 (n/a)"


# --- False successes and outcomes --------------------------------------------------------------


def test_failed_outcome_of_a_declared_completion_is_a_false_success():
    result = contract(make_trial(), make_trial(outcome={"verdict": "failed", "verifier": "x"}))

    assert (result.false_success.num, result.false_success.den) == (1, 2)
    assert result.first_failing_gate == "false_success"
    assert format_cells(result)["gate"] == "fail (false success)"


def test_failed_outcome_without_a_declared_completion_is_not_a_false_success():
    quiet = make_trial(
        declared_complete=False,
        outcome={"verdict": "failed", "verifier": "x"},
        quality={"grader_ran": False, "score": None},
    )
    result = contract(make_trial(), quiet)

    assert (result.false_success.num, result.false_success.den) == (0, 1)
    assert gates(result)["false_success"] == "pass"


def test_unavailable_outcome_is_an_unverified_completion_not_a_false_success():
    result = contract(
        make_trial(),
        make_trial(outcome={"verdict": "unavailable", "verifier": "x", "reason": "403"}),
    )

    assert (result.false_success.num, result.false_success.den) == (0, 2)
    assert result.unverified_completions == 1
    assert result.as_dict()["unverified_completion"] == 1
    # An explicit `unavailable` is a recorded outcome state: coverage holds.
    assert gates(result)["coverage"] == "pass"
    assert gates(result)["false_success"] == "pass"


# --- Cost ---------------------------------------------------------------------------------------


def test_zero_verified_outcomes_make_cost_per_verified_outcome_unavailable_and_fail_budget():
    unverified = make_trial(outcome={"verdict": "unavailable", "verifier": "x"})
    result = contract(unverified)

    assert result.cost_per_verified_outcome_usd is None
    assert result.as_dict()["cost_per_verified_outcome_usd"] is None
    assert format_cells(result)["cost/verified outcome"] == "unavailable"
    assert result.cost_per_run_usd == Decimal("0.10")  # the attempt still cost money
    assert gates(result)["budget"] == "fail"
    assert result.first_failing_gate == "budget"


def test_cost_per_run_is_over_trials_with_billed_cost_only():
    result = contract(
        make_trial(cost={"usd": 0.30, "billing_coverage": "billed"}),
        make_trial(cost={"usd": 0.50, "billing_coverage": "billed"}),
        make_trial(cost={"usd": 9.99, "billing_coverage": "estimated"}),
        thresholds={**POLICY, "coverage_required": False},
    )

    assert result.cost_per_run_usd == Decimal("0.40")
    assert result.as_dict()["billing_coverage"] == {"billed": 2, "runs": 3}
    # Covered cost only (0.80) over the three verified outcomes.
    assert result.cost_per_verified_outcome_usd == Decimal("0.27")
    assert result.estimated_usd == Decimal("9.99")


def test_budget_gate_fails_above_the_maximum_cost_per_verified_outcome():
    result = contract(make_trial(cost={"usd": 0.61, "billing_coverage": "billed"}))

    at_budget = contract(make_trial(cost={"usd": 0.60, "billing_coverage": "billed"}))

    assert gates(result)["budget"] == "fail"
    assert gates(at_budget)["budget"] == "pass"


# --- Coverage -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cost",
    [
        {"usd": 0.10, "billing_coverage": "estimated"},
        {"usd": None, "billing_coverage": "missing"},
        {"usd": None, "billing_coverage": "billed"},  # billed without an amount is not billed
        None,
    ],
)
def test_estimated_or_missing_cost_fails_coverage(cost):
    result = contract(make_trial(), make_trial(cost=cost))

    assert gates(result)["coverage"] == "fail"
    assert result.first_failing_gate == "coverage"
    assert result.as_dict()["billing_coverage"] == {"billed": 1, "runs": 2}


@pytest.mark.parametrize("outcome", [None, {"verdict": None, "verifier": "x"}, {}])
def test_declared_completion_without_an_outcome_state_fails_coverage(outcome):
    result = contract(make_trial(outcome=outcome))

    assert gates(result)["coverage"] == "fail"
    assert "without an outcome state" in result.gate("coverage").detail


def test_undeclared_trial_needs_no_outcome_state():
    quiet = make_trial(
        declared_complete=False, outcome=None, quality={"grader_ran": False, "score": None}
    )

    assert gates(contract(make_trial(), quiet))["coverage"] == "pass"


@pytest.mark.parametrize("denied", [False, True])
def test_effectful_attempt_without_a_destination_state_fails_coverage(denied):
    result = contract(make_trial(tool_effects=[effect("verified"), effect(None, denied)]))

    assert gates(result)["coverage"] == "fail"
    assert "without a destination state" in result.gate("coverage").detail


def test_coverage_not_required_by_the_policy_passes_and_still_names_the_defects():
    estimated = make_trial(cost={"usd": 0.1, "billing_coverage": "estimated"})
    result = contract(make_trial(), estimated, thresholds={**POLICY, "coverage_required": False})

    assert gates(result)["coverage"] == "pass"
    assert "1 trial(s) with estimated cost" in result.gate("coverage").detail


# --- Gate order ----------------------------------------------------------------------------------


def test_first_failing_gate_is_named_and_every_later_gate_is_still_reported():
    result = contract(
        make_trial(
            outcome={"verdict": "failed", "verifier": "x"},
            tool_effects=[effect("unknown")],
            progress=progress(4, 1),
            cost={"usd": 5.0, "billing_coverage": "estimated"},
        ),
        make_trial(cost={"usd": 5.0, "billing_coverage": "billed"}),
    )

    assert [gate.name for gate in result.gates] == [
        "coverage",
        "false_success",
        "unknown_effects",
        "floors",
        "budget",
    ]
    assert gates(result) == {
        "coverage": "fail",
        "false_success": "fail",
        "unknown_effects": "fail",
        "floors": "fail",
        "budget": "fail",
    }
    assert result.first_failing_gate == "coverage"
    assert result.release == "fail"
    assert format_cells(result)["gate"] == "fail (coverage)"


def test_a_late_failing_gate_is_named_when_the_earlier_ones_pass():
    result = contract(make_trial(cost={"usd": 0.75, "billing_coverage": "billed"}))

    assert gates(result) == {
        "coverage": "pass",
        "false_success": "pass",
        "unknown_effects": "pass",
        "floors": "pass",
        "budget": "fail",
    }
    assert result.first_failing_gate == "budget"


def test_quality_floor_is_the_last_gate_and_only_reported_when_the_policy_sets_one():
    policy = {**POLICY, "min_quality": 0.85}
    low = contract(make_trial(quality={"grader_ran": True, "score": 0.84}), thresholds=policy)
    high = contract(make_trial(quality={"grader_ran": True, "score": 0.85}), thresholds=policy)

    assert [gate.name for gate in low.gates][-1] == "quality"
    assert low.first_failing_gate == "quality"
    assert high.release == "pass"
    assert "quality" not in contract(make_trial()).as_dict()["gates"]


def test_quality_floor_fails_closed_when_no_trial_was_graded():
    ungraded = make_trial(quality={"grader_ran": False, "score": None})
    result = contract(ungraded, thresholds={**POLICY, "min_quality": 0.5})

    assert result.quality_mean is None
    assert format_cells(result)["quality"] == "unavailable (0/1)"
    assert gates(result)["quality"] == "fail"


def test_quality_is_averaged_only_over_trials_where_the_grader_ran():
    result = contract(
        make_trial(quality={"grader_ran": True, "score": 0.9}),
        make_trial(quality={"grader_ran": False, "score": None}),
    )

    assert result.quality_mean == Decimal("0.900")
    assert format_cells(result)["quality"] == "0.900 (1/2)"


def test_the_pages_quality_cell_names_its_two_counts_where_graded_exceeds_declared():
    """The grader also scores a trial that did not declare completion: 2 graded, 1 declared.
    The article's "(2/1)" read as two out of one; the pages say what each number counts,
    and the markdown table keeps the article's format."""
    result = contract(
        make_trial(quality={"grader_ran": True, "score": 0.5}),
        make_trial(declared_complete=False, quality={"grader_ran": True, "score": 0.7}),
    )

    assert format_cells(result)["quality"] == "0.600 (2/1)"
    assert format_cells(result, explained=True)["quality"] == (
        "0.600 (2 trials graded, 1 declared complete)"
    )
    assert "| 0.600 (2/1) |" in render_table([result])
    ungraded = contract(make_trial(quality={"grader_ran": False, "score": None}))
    assert format_cells(ungraded, explained=True)["quality"] == (
        "unavailable (0 trials graded, 1 declared complete)"
    )
    one = contract(make_trial())
    assert format_cells(one, explained=True)["quality"] == (
        "0.800 (1 trial graded, 1 declared complete)"
    )


# --- Intervals and rounding ---------------------------------------------------------------------


def test_wilson_interval_is_reported_from_30_declared_completions_and_null_below():
    at_30 = contract(*[make_trial() for _ in range(30)])
    at_29 = contract(*[make_trial() for _ in range(29)])

    low, high = at_30.as_dict()["false_success"]["wilson95"]
    assert low == 0.0
    assert high == pytest.approx(0.1135, abs=5e-5)  # 0/30: z^2 / (n + z^2)
    assert format_cells(at_30)["false success"] == "0/30 [0.000, 0.114]"
    assert at_29.as_dict()["false_success"]["wilson95"] is None
    assert format_cells(at_29)["false success"] == "0/29"


def test_wilson_interval_matches_a_known_value():
    low, high = wilson_interval(15, 30)

    assert low == pytest.approx(0.3315, abs=5e-5)
    assert high == pytest.approx(0.6685, abs=5e-5)


def test_quality_mean_rounds_half_up_to_thousandths():
    # 0.0005 and 0.0025 sit exactly on the boundary; banker's rounding would give 0.000, 0.002.
    first = contract(
        make_trial(quality={"grader_ran": True, "score": 0.001}),
        make_trial(quality={"grader_ran": True, "score": 0}),
    )
    second = contract(
        make_trial(quality={"grader_ran": True, "score": 0.003}),
        make_trial(quality={"grader_ran": True, "score": 0.002}),
    )

    assert first.quality_mean == Decimal("0.001")
    assert first.as_dict()["quality"]["mean"] == 0.001
    assert second.quality_mean == Decimal("0.003")


def test_money_rounds_half_up_to_cents():
    # 0.10 + 0.15 over 2 runs is $0.125; banker's rounding would give $0.12.
    result = contract(
        make_trial(cost={"usd": 0.10, "billing_coverage": "billed"}),
        make_trial(cost={"usd": 0.15, "billing_coverage": "billed"}),
    )

    assert result.cost_per_run_usd == Decimal("0.13")
    assert result.as_dict()["cost_per_run_usd"] == 0.13
    assert format_cells(result)["cost/verified outcome"] == "$0.13"
    assert round_half_up(Decimal("0.0005"), 1, Decimal("0.001")) == Decimal("0.001")


def test_float_costs_are_read_as_the_decimals_they_print_as():
    # The binary float nearest 2.675 is 2.67499999...; read naively it would round to $2.67.
    result = contract(make_trial(cost={"usd": 2.675, "billing_coverage": "billed"}))

    assert result.cost_per_run_usd == Decimal("2.68")


# --- Thresholds ---------------------------------------------------------------------------------


def test_file_thresholds_and_policy_fields_mean_the_same_limits():
    file_thresholds = json.loads(FIXTURE.read_text())["thresholds"]

    assert parse_thresholds(file_thresholds) == parse_thresholds(POLICY)
    assert parse_thresholds(file_thresholds) == DEFAULT_THRESHOLDS
    assert set(POLICY) == set(THRESHOLD_FIELDS)


def test_thresholds_accept_a_publishing_policys_nullable_fields():
    limits = parse_thresholds(
        {
            "max_false_successes": 1,
            "max_unknown_effects": 2,
            "min_useful_progress": None,
            "min_tool_effect_integrity": None,
            "max_cost_per_verified_outcome_usd": None,
            "min_quality": 0.7,
            "coverage_required": False,
        }
    )

    assert limits == Thresholds(
        max_false_successes=1,
        max_unknown_effects=2,
        min_useful_progress=None,
        min_tool_effect_integrity=None,
        max_cost_per_verified_outcome_usd=None,
        min_quality=Decimal("0.7"),
        coverage_required=False,
    )


def test_limits_a_policy_does_not_set_pass_and_say_so_and_a_set_budget_fails_closed():
    no_limits = {
        **POLICY,
        "min_useful_progress": None,
        "min_tool_effect_integrity": None,
        "max_cost_per_verified_outcome_usd": None,
    }
    spendy = contract(
        make_trial(cost={"usd": 50, "billing_coverage": "billed"}, progress=progress(5, 0)),
        thresholds=no_limits,
    )
    nothing_bought = contract(
        make_trial(outcome={"verdict": "unavailable", "verifier": "x"}), thresholds=no_limits
    )

    assert gates(spendy)["floors"] == "pass"
    assert "no budget set" in spendy.gate("budget").detail
    assert gates(spendy)["budget"] == "pass"
    # No budget set: nothing to exceed, even with nothing bought (never "fails at budget").
    assert gates(nothing_bought)["budget"] == "pass"
    assert nothing_bought.gate("budget").detail == (
        "no budget set (cost per verified outcome unavailable: no verified outcome)"
    )
    # A budget set with no verified outcome to hold it against fails closed.
    budgeted = contract(
        make_trial(outcome={"verdict": "unavailable", "verifier": "x"}),
        thresholds={**no_limits, "max_cost_per_verified_outcome_usd": Decimal("0.60")},
    )
    assert gates(budgeted)["budget"] == "fail"
    assert "against a budget of $0.60" in budgeted.gate("budget").detail


@pytest.mark.parametrize(
    "raw, message",
    [
        ({**POLICY, "false_success_max_count": 0}, "mix"),
        ({**POLICY, "min_usefull_progress": 0.9}, "unknown threshold key"),
        ({k: v for k, v in POLICY.items() if k != "max_false_successes"}, "max_false_successes"),
        ({**POLICY, "min_useful_progress": 1.5}, "between 0 and 1"),
        ({**POLICY, "max_unknown_effects": 0.5}, "whole number"),
        ({**POLICY, "coverage_required": "yes"}, "true or false"),
        ({"false_success_max_count": 0}, "unknown_tool_effects_max_count"),
        (
            {
                "false_success_max_count": 0,
                "unknown_tool_effects_max_count": 0,
                "coverage": {"cost_requires_billing_coverage": False},
            },
            "fixed",
        ),
    ],
)
def test_malformed_thresholds_are_refused_with_the_reason(raw, message):
    with pytest.raises(ThresholdsError, match=message):
        parse_thresholds(raw)


# --- Trial records ------------------------------------------------------------------------------


def test_a_trial_missing_a_required_field_is_named_with_the_field():
    record = make_trial(trial_id="s1-03")
    del record["progress"]

    with pytest.raises(TrialRecordError) as error:
        accumulate([make_trial(), record])

    assert str(error.value) == "trials[1] (trial 's1-03'): missing required field 'progress'"


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"outcome": {"verdict": "maybe"}}, "'outcome.verdict' must be one of"),
        ({"tool_effects": [effect("done")]}, "'tool_effects[0].state' must be one of"),
        ({"quality": {"grader_ran": False, "score": 0.5}}, "must be null when the grader"),
        ({"quality": {"grader_ran": True, "score": None}}, "required when the grader ran"),
        ({"progress": progress(1, 2)}, "exceeds"),
        ({"cost": {"usd": -1, "billing_coverage": "billed"}}, "must be from 0 to 100,000"),
        ({"declared_complete": "yes"}, "'declared_complete' must be true or false"),
    ],
)
def test_a_malformed_trial_is_refused_with_the_field(overrides, message):
    with pytest.raises(TrialRecordError, match=re.escape(message)):
        accumulate([make_trial(**overrides)])


def test_a_repeated_trial_id_is_refused():
    with pytest.raises(TrialRecordError, match="repeats trials\\[0\\]"):
        accumulate([make_trial(trial_id="a"), make_trial(trial_id="a")])


def test_variants_are_reported_in_order_of_first_appearance():
    trials = [
        make_trial(variant="b"),
        make_trial(variant="a"),
        make_trial(variant="b"),
    ]

    assert [totals.variant for totals in accumulate(trials)] == ["b", "a"]
    assert [totals.runs for totals in accumulate(trials)] == [2, 1]


# --- Trial files --------------------------------------------------------------------------------


def test_json_lines_are_read_one_trial_per_line_with_default_thresholds():
    trials = json.loads(FIXTURE.read_text())["trials"]
    document = load_document("\n".join(json.dumps(trial) for trial in trials) + "\n\n")

    assert document.thresholds is None
    assert document.locations[:2] == ["line 1", "line 2"]
    assert len(document.trials) == 10


def test_malformed_json_is_reported_with_its_line():
    # Drop the comma after the first variant (line 39): the parser stops on line 40.
    text = FIXTURE.read_text().replace('"stable v1",', '"stable v1"', 1)

    with pytest.raises(ContractInputError, match=r"malformed JSON at line 40, column \d+"):
        load_document(text)


def test_a_malformed_json_line_is_reported_with_its_line():
    good = json.dumps(make_trial())

    with pytest.raises(ContractInputError, match="malformed JSON at line 3, column 2"):
        load_document(f"{good}\n{json.dumps(make_trial())}\n{{oops\n")


def test_the_fixture_is_not_changed_by_reading_it():
    document = json.loads(FIXTURE.read_text())
    before = copy.deepcopy(document)
    compute_contract(document["trials"], document["thresholds"])

    assert document == before
