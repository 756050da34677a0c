"""Fail closed: a release never rests on blocking checks that could not
be scored, even though such checks do not fail a case (section 5)."""

import pytest

from evaluations.actions.start_run import StartRun
from governance.models import PublishingPolicy
from governance.publishing.decision import decide
from tests.support import factories

JUDGED = {"label": "Faithful", "kind": "faithfulness", "params": {}, "threshold": 0.9}
SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}


@pytest.fixture
def policy(db):
    # Only the gate under test matters: no contract floors or coverage.
    return PublishingPolicy.objects.create(
        name="test",
        coverage_required=False,
        min_useful_progress=None,
        min_tool_effect_integrity=None,
        min_case_pass_rate=1.0,
    )


def run_of(builder, capture, callable_path, checks, cases=None):
    version = factories.agent_version(callable_path=callable_path)
    dataset_version = factories.dataset_version(
        cases=cases or [("c1", "q", {"contexts": ["ctx"]})], checks=checks
    )
    with capture(execute=True):
        run = StartRun(
            acting_user=builder, agent_version=version, dataset_version=dataset_version
        ).execute()
    run.refresh_from_db()
    return run


def gate(decision, name):
    return next(g for g in decision["gates"] if g["name"] == name)


def test_a_blocking_model_check_without_a_judge_blocks_the_release(
    builder, policy, settings, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    run = run_of(
        builder,
        django_capture_on_commit_callbacks,
        "tests.support.agents_under_test.echo",
        [JUDGED, SHAPE],
    )
    assert run.summary["case_pass_rate"] == 1.0  # section 5: skipped does not fail the case
    decision = decide([run], policy)
    assert gate(decision, "case_pass_rate")["status"] == "pass"
    scored = gate(decision, "checks_scored")
    assert (
        scored["status"] == "fail" and "1 blocking check result(s) not scored" in scored["detail"]
    )
    assert decision["release"] == "fail"


def test_an_agent_that_crashes_on_every_trial_blocks_the_release(
    builder, policy, django_capture_on_commit_callbacks
):
    run = run_of(
        builder,
        django_capture_on_commit_callbacks,
        "tests.support.agents_under_test.scripted",
        [SHAPE],
        cases=[("c1", {"raise": "boom"}, {})],
    )
    decision = decide([run], policy)
    assert gate(decision, "checks_scored")["value"]["runs"][0]["trials_error"] == 1
    assert decision["release"] == "fail"


def test_a_check_disabled_by_an_override_does_not_block(
    builder, policy, settings, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    run = run_of(
        builder,
        django_capture_on_commit_callbacks,
        "tests.support.agents_under_test.echo",
        [JUDGED, SHAPE],
        cases=[("c1", "q", {"overrides": {"Faithful": {"disabled": True}}})],
    )
    decision = decide([run], policy)
    assert gate(decision, "checks_scored")["status"] == "pass"


def test_informative_checks_that_could_not_be_scored_do_not_block(
    builder, policy, settings, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    run = run_of(
        builder,
        django_capture_on_commit_callbacks,
        "tests.support.agents_under_test.echo",
        [{**JUDGED, "mode": "informative"}, SHAPE],
    )
    assert gate(decide([run], policy), "checks_scored")["status"] == "pass"
