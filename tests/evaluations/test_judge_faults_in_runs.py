"""A judge that fails never fails a case: through a whole run, each fault of the loopback
server ends the model check in `error`, the case is not failed by it, and every call is
recorded. With no judge configured, a model check is `skipped`, never `passed`."""

import socket

import pytest

from evaluations.actions.start_run import StartRun
from evaluations.models import CaseResult, CheckResult, JudgeCall
from evaluations.verdict import run_verdict
from tests.support import factories
from tests.support.judge_fixtures import JUDGE_MODEL
from tests.support.llm_server import hang, malformed, rate_limited, refusal, server_error

CHECKS = [
    {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0},
    {
        "label": "Polite",
        "kind": "custom",
        "threshold": 0.5,
        "params": {"criterion": "The answer is polite.", "anchors": "0 = rude, 1 = polite"},
    },
]


@pytest.fixture
def one_case_run(builder, django_capture_on_commit_callbacks):
    def start():
        version = factories.agent_version(callable_path="tests.support.agents_under_test.echo")
        dataset_version = factories.dataset_version(cases=[("greet", "hello", {})], checks=CHECKS)
        with django_capture_on_commit_callbacks(execute=True):
            run = StartRun(
                acting_user=builder, agent_version=version, dataset_version=dataset_version
            ).execute()
        run.refresh_from_db()
        return run

    return start


FAULTS = {
    "rate limited (429 with Retry-After)": [rate_limited(0.05)] * 3,
    "server error (500)": [server_error(500)] * 3,
    "hang past the timeout": [hang(3)] * 3,
    "malformed JSON, twice": [malformed(), malformed()],
    "refusal, twice": [refusal(), refusal()],
}


@pytest.mark.parametrize("fault", FAULTS, ids=list(FAULTS))
def test_a_judge_fault_is_an_error_that_fails_no_case(
    fault, judge_settings, llm_server, one_case_run
):
    llm_server.script(FAULTS[fault])
    run = one_case_run()
    result = CheckResult.objects.get(trial__run=run, check_config__label="Polite")
    assert result.status == "error"
    assert result.score is None
    assert result.reason
    # The error counts neither against the case nor for it: no verdict, and why.
    case = CaseResult.objects.get(run=run)
    assert (case.status, case.reason, case.passed) == ("unscored", "judge unavailable", False)
    calls = JudgeCall.objects.filter(run=run)
    assert calls.count() == len(FAULTS[fault])
    assert all(call.status == "error" for call in calls)
    assert all(call.trial_id == result.trial_id for call in calls)
    assert sorted(result.judge_call_ids) == sorted(calls.values_list("pk", flat=True))


def test_without_a_judge_a_model_check_is_skipped(settings, one_case_run):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    run = one_case_run()
    result = CheckResult.objects.get(trial__run=run, check_config__label="Polite")
    assert result.status == "skipped" and "judge" in result.reason
    assert not JudgeCall.objects.exists()
    # No judge configured is a failure to run, not a check that does not apply.
    case = CaseResult.objects.get(run=run)
    assert (case.status, case.reason) == ("unscored", "judge unavailable")


def test_a_good_verdict_with_quoted_evidence_scores(judge_settings, llm_server, one_case_run):
    llm_server.script([{"quotes": ["You said"], "reason": "It greets.", "score": 1}])
    run = one_case_run()
    result = CheckResult.objects.get(trial__run=run, check_config__label="Polite")
    assert (result.status, result.score) == ("passed", 1.0), result.reason
    assert JudgeCall.objects.filter(run=run, status="ok").count() == 1


def test_a_verdict_quoting_text_that_is_not_in_the_output_is_unverifiable(
    judge_settings, llm_server, one_case_run
):
    llm_server.script([{"quotes": ["Dear valued customer"], "reason": "Polite.", "score": 1}])
    run = one_case_run()
    result = CheckResult.objects.get(trial__run=run, check_config__label="Polite")
    assert result.status == "error" and "unverifiable evidence" in result.reason
    assert CaseResult.objects.get(run=run).status == "unscored"


def test_a_dead_judge_is_named_with_its_cause_in_the_verdict(judge_settings, one_case_run):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    judge_settings.SHERLOCK_JUDGE_BASE_URL = f"http://127.0.0.1:{port}/v1"
    run = one_case_run()

    result = CheckResult.objects.get(trial__run=run, check_config__label="Polite")
    assert result.status == "error"
    assert result.reason.startswith("judge unavailable: connection refused")
    verdict = run_verdict(run)
    assert verdict.outcome != "passed"  # (the defaults fail its contract too)
    (judge,) = [item for item in verdict.missing if item.code == "judge_unavailable"]
    assert f"the judge at http://127.0.0.1:{port}/v1 (model {JUDGE_MODEL})" in judge.detail
    assert "did not answer (connection refused" in judge.detail
    assert "check_judge" in judge.fix
