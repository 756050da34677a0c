"""The release decision `governance.publishing.decision.decide`: a version's gate runs under a
publishing policy, every gate with its numbers, as the snapshot a publish request stores."""

import json

import pytest

from evaluations.choices import RunStatus
from governance.models import PublishingPolicy
from governance.publishing.decision import decide
from tests.support.contract_runs import (
    POLICY_THRESHOLDS,
    add_trial,
    empty_run,
    import_seed_variant,
)

pytestmark = pytest.mark.django_db


def policy(**overrides):
    fields = {**POLICY_THRESHOLDS, "min_case_pass_rate": 0.9, **overrides}
    return PublishingPolicy.objects.create(name="Release policy", **fields)


def test_decide_passes_the_stable_variant_with_every_gate_and_its_numbers():
    run = import_seed_variant("stable v1")
    run.summary = {**run.summary, "case_pass_rate": 1.0}

    decision = decide([run], policy())

    assert decision["release"] == "pass"
    assert decision["first_failing_gate"] is None
    assert [g["name"] for g in decision["gates"]] == [
        "coverage",
        "false_success",
        "unknown_effects",
        "floors",
        "budget",
        "quality",
        "checks_scored",
        "case_pass_rate",
    ]
    gates = {g["name"]: g for g in decision["gates"]}
    assert gates["false_success"]["value"]["num"] == 0
    assert gates["false_success"]["threshold"] == {"max": 0}
    assert gates["budget"]["value"]["cost_per_verified_outcome_usd"] == "0.52"
    assert gates["budget"]["threshold"] == {"max": "0.6"}
    assert gates["floors"]["value"]["useful_progress"]["num"] == 14
    assert gates["floors"]["value"]["tool_effect_integrity"]["intentionally_denied"] == 1
    assert gates["quality"]["status"] == "n/a"
    assert decision["measures"]["quality"]["mean"] == 0.818
    assert json.loads(json.dumps(decision)) == decision  # storable as it is in a JSONField


def test_decide_names_false_success_first_for_the_fast_variant_and_lists_later_gates():
    run = import_seed_variant("fast v2")
    run.summary = {**run.summary, "case_pass_rate": 1.0}

    decision = decide([run], policy())

    assert decision["release"] == "fail"
    assert decision["first_failing_gate"] == "false_success"
    statuses = {g["name"]: g["status"] for g in decision["gates"]}
    assert statuses["unknown_effects"] == "fail"
    assert statuses["budget"] == "fail"
    assert statuses["case_pass_rate"] == "pass"


def test_decide_fails_closed_on_a_run_that_did_not_complete():
    run = empty_run(status=RunStatus.FAILED, summary={})
    add_trial(run)

    decision = decide([run], policy())

    assert decision["first_failing_gate"] == "coverage"
    coverage = decision["gates"][0]
    assert f"#{run.pk} did not complete" in coverage["detail"]
    assert coverage["value"]["incomplete_runs"] == [run.pk]
    assert decision["gates"][-1]["status"] == "fail"  # no case pass rate either


def test_decide_with_no_runs_blocks():
    decision = decide([], policy())

    assert decision["release"] == "fail"
    assert decision["first_failing_gate"] == "coverage"


def test_decide_checks_the_policys_min_case_pass_rate_after_the_contract_gates():
    run = empty_run(summary={"cases": 10, "passed": 8, "case_pass_rate": 0.8})
    add_trial(run)

    decision = decide([run], policy(min_case_pass_rate=0.9))

    assert decision["first_failing_gate"] == "case_pass_rate"
    gate = decision["gates"][-1]
    assert gate["value"] == {"runs": [{"run": run.pk, "rate": 0.8}]}
    assert gate["threshold"] == {"min": 0.9}


def test_an_imported_run_without_checks_has_no_case_pass_rate_to_hold_against_the_policy():
    """No check judged the cases of imported trials: the case gate is n/a (not a pass, not 0),
    and the contract decides, as on the run page (one verdict, evaluations.verdict)."""
    run = import_seed_variant("stable v1")

    rules = policy()
    decision = decide([run], rules)

    gates = {g["name"]: g for g in decision["gates"]}
    assert gates["case_pass_rate"]["status"] == "n/a"
    assert decision["verdict"]["outcome"] == (
        "passed" if decision["release"] == "pass" else "failed"
    )
    judged = empty_run(
        agent_version=run.agent_version,
        summary={"cases": 2, "passed": 1, "case_pass_rate": 0.5},
    )
    assert {g["name"]: g for g in decide([judged], rules)["gates"]}["case_pass_rate"][
        "status"
    ] == "fail"


def test_decide_sums_the_trials_of_several_gate_runs_of_one_version():
    first = empty_run()
    add_trial(first)
    second = empty_run(agent_version=first.agent_version)
    add_trial(second, outcome_verdict="failed")

    decision = decide([first, second], policy())

    gates = {g["name"]: g for g in decision["gates"]}
    assert (gates["false_success"]["value"]["num"], gates["false_success"]["value"]["den"]) == (
        1,
        2,
    )
    assert decision["first_failing_gate"] == "false_success"


def test_a_quality_floor_fails_closed_when_no_trial_was_graded():
    run = empty_run()
    add_trial(run)

    decision = decide([run], policy(min_quality=0.5))

    quality = next(g for g in decision["gates"] if g["name"] == "quality")
    assert quality["status"] == "fail"
    assert quality["threshold"] == {"min": "0.5"}
