"""A run's JUnit XML, one writer for every surface (`GET /api/v1/runs/{id}/junit/`, `export_run
--format junit`, `evaluate --junit`, the client): valid against the Jenkins/Surefire schema,
read by junitparser as a CI reads it, a `verdict` testcase that fails unless the verdict passed,
unscored cases as errors with their reason, and well-formed whatever an agent's error holds."""

import pytest
from django.core.management import call_command
from guardian.shortcuts import assign_perm

from evaluations.models import Trial
from evaluations.reads.junit import run_junit, xml_safe
from evaluations.verdict import run_verdict
from governance.models import PublishingPolicy
from tests.support import factories
from tests.support.governance import api_client
from tests.support.junit import outcomes, read_junit

PASSES_IF_TOOL = {
    "label": "Tools",
    "kind": "tools_used",
    "params": {"match": "any_order"},
    "threshold": 1.0,
}


@pytest.fixture
def run(builder, django_capture_on_commit_callbacks):
    # `scripted` calls the tools its input names: "good" calls the expected one, "bad" none.
    version = factories.agent_version(callable_path="tests.support.agents_under_test.scripted")
    expected = {"expected_tools": [{"name": "kb.search"}]}
    dataset_version = factories.dataset_version(
        cases=[
            ("bad", {"tools": []}, expected),
            ("good", {"tools": ["kb.search"]}, expected),
            ("down", {"raise": "the endpoint is down"}, expected),
        ],
        checks=[PASSES_IF_TOOL],
    )
    return factories.start_run(
        builder, version, dataset_version, django_capture_on_commit_callbacks, reps=2
    )


def junit_of(client, run, **params):
    answer = client.get(f"/api/v1/runs/{run.pk}/junit/", params)
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"].startswith("application/xml")
    return answer.content.decode()


def test_the_api_report_reads_each_case_as_its_state_and_the_verdict_as_a_test(builder, run):
    suite = read_junit(junit_of(api_client(builder), run))

    assert outcomes(suite) == {
        "bad": "failure",
        "down": "error",
        "good": "passed",
        "verdict": "failure",
    }
    assert (suite.tests, suite.failures, suite.errors) == (4, 2, 1)
    cases = {case.name: case for case in suite}
    (failure,) = cases["bad"].result
    assert failure.type == "failed"
    assert "failed: Tools" in failure.message
    assert "Tools: failed in 2 of 2 repetition(s)" in failure.text
    (error,) = cases["down"].result
    assert (error.type, error.message) == ("agent_error", "no verdict: agent error")
    assert "2 of 2 repetition(s) could not be scored" in error.text
    assert "the endpoint is down" in cases["down"].system_out
    (verdict,) = cases["verdict"].result
    assert verdict.type == run_verdict(run).outcome != "passed"


def test_export_run_and_the_api_write_the_same_file(builder, run, capsys):
    from_api = junit_of(api_client(builder), run)
    call_command("export_run", str(run.pk), "--format", "junit")
    assert capsys.readouterr().out == from_api


def answering(case, **_):
    """A question-answering agent that answers and reports its bill: a run that passes."""
    return {"output": f"The answer to {case['input']['q']}.", "cost_usd": 0.01}


def test_a_passed_run_has_a_passing_verdict_test(builder, django_capture_on_commit_callbacks):
    version = factories.agent_version(callable_path="tests.evaluations.test_junit.answering")
    shape = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}}
    dataset_version = factories.dataset_version(
        cases=[("q1", {"q": "one"}, {}), ("q2", {"q": "two"}, {})],
        checks=[shape | {"threshold": 1.0}],
    )
    # A policy of the agent's own with no budget (the defaults ask for verified outcomes).
    PublishingPolicy.objects.create(name="QA", agent=version.agent, version=1)
    run = factories.start_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
    verdict = run_verdict(run)
    assert verdict.passed, verdict.reason_texts
    suite = read_junit(run_junit(run, verdict))
    assert outcomes(suite) == {"q1": "passed", "q2": "passed", "verdict": "passed"}
    assert (suite.tests, suite.failures, suite.errors) == (3, 0, 0)


def test_control_characters_in_an_error_leave_the_file_well_formed(builder, run):
    # An agent's error with an ANSI colour, a bell and a vertical tab: XML 1.0 forbids them.
    Trial.objects.filter(run=run, case__key="down").update(
        error="\x1b[31mboom\x1b[0m \x07 rang \x0b tab"
    )
    text = junit_of(api_client(builder), run)

    suite = read_junit(text)
    down = next(case for case in suite if case.name == "down")
    assert "\\x1b[31mboom\\x1b[0m \\x07 rang \\x0b tab" in down.system_out


def test_every_character_xml_forbids_is_escaped():
    assert xml_safe("a\x00b\x1bc\ud800d\ufffe\tok\n") == "a\\x00b\\x1bc\\ud800d\\ufffe\tok\n"
    assert xml_safe("x" * 50, limit=10) == "x" * 9 + "…"


def test_a_run_one_may_not_see_has_no_report_and_a_bad_policy_names_the_field(
    builder, outsider, run
):
    assert api_client(outsider).get(f"/api/v1/runs/{run.pk}/junit/").status_code == 404
    assign_perm("agents.view_agent", outsider, run.agent_version.agent)
    read_junit(junit_of(api_client(outsider), run))
    refused = api_client(builder).get(f"/api/v1/runs/{run.pk}/junit/", {"policy": "x"})
    assert refused.status_code == 400
    assert refused.json()["field"] == "policy"
