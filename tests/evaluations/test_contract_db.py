"""The contract of stored runs: totals by database aggregates and `run_contract`
(the release decision that applies a policy to them is `tests/governance/test_decide.py`)."""

from datetime import date
from decimal import Decimal

import pytest

from evaluations.choices import CheckStatus, CostKind
from evaluations.contract import compute_contract, parse_thresholds
from evaluations.contract.runs import run_contract, run_totals
from governance.models import PublishingPolicy
from tests.support import factories
from tests.support.contract_runs import (
    GRADER,
    POLICY_THRESHOLDS,
    add_trial,
    empty_run,
    import_seed_variant,
    seed_records,
)

pytestmark = pytest.mark.django_db


def policy(**overrides):
    fields = {**POLICY_THRESHOLDS, "min_case_pass_rate": 0.9, **overrides}
    return PublishingPolicy.objects.create(name="Release policy", **fields)


def comparable(result):
    data = result.as_dict()
    data.pop("variant")
    return data


@pytest.mark.parametrize("variant", ["stable v1", "fast v2"])
def test_stored_seed_trials_give_the_same_contract_as_the_trial_file(variant):
    run = import_seed_variant(variant)
    from_file = compute_contract(seed_records(variant), POLICY_THRESHOLDS)[0]

    assert comparable(run_contract(run, POLICY_THRESHOLDS)) == comparable(from_file)


def test_the_fast_variant_fails_at_false_success_and_still_reports_the_later_gates():
    result = run_contract(import_seed_variant("fast v2"), POLICY_THRESHOLDS)

    assert result.first_failing_gate == "false_success"
    assert [(g.name, g.status) for g in result.gates] == [
        ("coverage", "pass"),
        ("false_success", "fail"),
        ("unknown_effects", "fail"),
        ("floors", "fail"),
        ("budget", "fail"),
    ]
    assert result.cost_per_verified_outcome_usd == Decimal("0.63")
    assert result.cost_per_run_usd == Decimal("0.38")


def test_the_query_count_does_not_grow_with_the_number_of_trials(django_assert_num_queries):
    run = empty_run(checks=[GRADER])
    for _ in range(3):
        add_trial(run, quality=0.5)
    # The trials, their judge spend, the quality grader, the judge spend bound to no trial.
    with django_assert_num_queries(4):
        small = run_totals(run)
    for _ in range(40):
        add_trial(run, quality=0.5)
    with django_assert_num_queries(4):
        large = run_totals(run)

    assert (small.runs, large.runs) == (3, 43)
    assert large.quality_sum == Decimal("21.5")


def test_judge_spend_of_a_trial_is_part_of_its_covered_cost():
    run = empty_run()
    trial = add_trial(run, cost_usd="0.30")
    factories.cost_line(
        kind=CostKind.SCORING, day=date.today(), usd=Decimal("0.12"), run=run, trial=trial
    )
    factories.cost_line(  # agent-kind ledger lines are already in the trial's own cost
        kind=CostKind.AGENT, day=date.today(), usd=Decimal("5"), run=run, trial=trial
    )

    result = run_contract(run, POLICY_THRESHOLDS)

    assert result.billed_usd == Decimal("0.42")
    assert result.cost_per_verified_outcome_usd == Decimal("0.42")


def test_a_judge_call_without_price_makes_its_trials_cost_missing_and_fails_coverage():
    run = empty_run()
    trial = add_trial(run, cost_usd="0.30")
    factories.cost_line(kind=CostKind.SCORING, day=date.today(), usd=None, run=run, trial=trial)

    result = run_contract(run, POLICY_THRESHOLDS)

    assert result.missing_cost_runs == 1
    assert result.billed_runs == 0
    assert result.gate("coverage").status == "fail"
    assert "missing cost" in result.gate("coverage").detail


def test_run_level_judge_spend_is_counted_and_an_unpriced_one_fails_coverage():
    run = empty_run()
    add_trial(run, cost_usd="0.30")
    factories.cost_line(kind=CostKind.SCORING, day=date.today(), usd=Decimal("0.05"), run=run)
    assert run_contract(run, POLICY_THRESHOLDS).billed_usd == Decimal("0.35")

    factories.cost_line(kind=CostKind.SCORING, day=date.today(), usd=None, run=run)
    coverage = run_contract(run, POLICY_THRESHOLDS).gate("coverage")
    assert coverage.status == "fail"
    assert "judge call(s) of the run with no price" in coverage.detail


def test_estimated_cost_is_kept_apart_and_fails_coverage():
    run = empty_run()
    add_trial(run, cost_usd="0.30")
    add_trial(run, cost_usd="0.20", billing_coverage="estimated")

    result = run_contract(run, POLICY_THRESHOLDS)

    assert (result.billed_runs, result.billed_usd) == (1, Decimal("0.30"))
    assert (result.estimated_runs, result.estimated_usd) == (1, Decimal("0.20"))
    assert result.gate("coverage").status == "fail"


def test_a_run_without_a_quality_grader_reports_quality_as_unavailable_not_zero():
    run = empty_run()
    add_trial(run)

    result = run_contract(run, POLICY_THRESHOLDS)

    assert result.quality_mean is None
    assert result.graded == 0
    assert result.as_dict()["quality"]["mean"] is None


def test_quality_counts_only_trials_where_the_grader_ran():
    run = empty_run(checks=[GRADER])
    add_trial(run, quality=0.9)
    add_trial(run, quality=0.7)
    add_trial(run, quality_status=CheckStatus.SKIPPED)
    add_trial(run, quality_status=CheckStatus.ERROR)

    result = run_contract(run, POLICY_THRESHOLDS)

    assert (result.quality_mean, result.graded) == (Decimal("0.800"), 2)


def test_a_declared_completion_without_outcome_state_fails_coverage_and_unavailable_does_not():
    run = empty_run()
    add_trial(run, outcome_verdict="unavailable")
    # Recorded but verified by nobody: not "pass" (every outcome checked), not a failure
    # unless the policy requires verified outcomes.
    assert run_contract(run, POLICY_THRESHOLDS).gate("coverage").status == "n/a"
    assert run_contract(run, POLICY_THRESHOLDS).unverified_completions == 1
    strict = {**POLICY_THRESHOLDS, "requires_verified_outcomes": True}
    assert run_contract(run, strict).gate("coverage").status == "fail"

    add_trial(run, outcome_verdict="")
    result = run_contract(run, POLICY_THRESHOLDS)
    assert result.completions_without_outcome == 1
    assert result.gate("coverage").status == "fail"


def test_owned_wait_windows_are_excluded_and_unowned_ones_count_as_stalls():
    owned = {
        "owner": "billing-approver",
        "decision_requested": "approve the credit",
        "deadline": "2026-03-02T17:00:00Z",
        "resumable": True,
    }
    progress = {"active_windows": 2, "windows_with_evidence_delta": 2, "excluded_wait_windows": 4}
    run = empty_run()
    add_trial(run, progress=progress, wait=owned)
    result = run_contract(run, POLICY_THRESHOLDS)
    assert (str(result.useful_progress), result.excluded_wait_windows) == ("2/2", 4)

    add_trial(run, progress=progress, wait={**owned, "owner": ""})
    result = run_contract(run, POLICY_THRESHOLDS)
    assert str(result.useful_progress) == "4/8"
    assert result.stalled_wait_windows == 4


def test_denied_calls_are_shown_but_not_in_the_tool_effect_denominator():
    run = empty_run()
    add_trial(
        run,
        tool_effects=[
            {"call": "billing.apply_credit", "state": "verified", "intentionally_denied": True},
            {"call": "refunds.create", "state": "failed", "intentionally_denied": False},
        ],
    )

    result = run_contract(run, POLICY_THRESHOLDS)

    assert str(result.tool_effect_integrity) == "0/1"
    assert result.intentionally_denied == 1


def test_the_false_success_rate_has_a_wilson_interval_from_30_declared_completions():
    run = empty_run()
    for _ in range(29):
        add_trial(run)
    assert run_contract(run, POLICY_THRESHOLDS).false_success.wilson95 is None
    add_trial(run, outcome_verdict="failed")

    false_success = run_contract(run, POLICY_THRESHOLDS).false_success

    assert (false_success.num, false_success.den) == (1, 30)
    low, high = false_success.wilson95
    assert 0 < low < 1 / 30 < high < 0.2


def test_policy_thresholds_are_read_as_the_contract_reads_them():
    limits = parse_thresholds({**POLICY_THRESHOLDS})
    assert limits.min_useful_progress == Decimal("0.9")
