"""The decision: made when the last gate run finishes (`run_finished`), once, with every
number, the runs and the policy version; fail closed."""

import pytest

from evaluations.choices import RunStatus
from evaluations.models import Run
from evaluations.signals import run_finished
from governance.actions.decide_publish_request import DecidePublishRequest
from governance.actions.request_publication import RequestPublication
from governance.choices import RequestState
from governance.models import AuditEntry, GateDataset
from tests.support import factories
from tests.support.governance import TOOLS_CHECK, finish_gate_runs, tool_case


def test_the_decision_records_every_gate_the_runs_and_the_policy_version(
    passed_request, policy, good_version
):
    decision = passed_request.decision
    assert passed_request.state == RequestState.PASSED and passed_request.decided_at
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
    assert all({"status", "detail", "value", "threshold"} <= set(g) for g in decision["gates"])
    assert decision["release"] == "pass" and decision["first_failing_gate"] is None
    assert decision["policy"]["id"] == policy.pk and decision["policy"]["version"] == 1
    assert [r["id"] for r in decision["runs"]] == list(
        passed_request.runs.values_list("pk", flat=True)
    )
    assert decision["config_hash"] == good_version.config_hash
    entry = AuditEntry.objects.get(action="governance.request.decide")
    assert entry.actor_id is None and entry.after["state"] == "passed"


def test_a_blocked_decision_names_the_first_failing_gate_and_still_lists_the_rest(
    blocked_request,
):
    decision = blocked_request.decision
    assert blocked_request.state == RequestState.BLOCKED
    assert decision["first_failing_gate"] == "false_success"
    statuses = {g["name"]: g["status"] for g in decision["gates"]}
    assert statuses["case_pass_rate"] == "fail" and statuses["coverage"] == "pass"


def test_a_gate_run_that_failed_blocks_the_decision(author, good_version, policy):
    request = RequestPublication(acting_user=author, agent_version=good_version).execute()
    run = request.runs.get()
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED)
    run_finished.send(sender=Run, run_id=run.pk, status="failed")
    request.refresh_from_db()
    assert request.state == RequestState.BLOCKED
    assert request.decision["first_failing_gate"] == "coverage"
    assert "did not complete" in request.decision["gates"][0]["detail"]


def test_the_decision_waits_for_every_gate_run(author, good_version, policy):
    second = factories.dataset("second-gate")
    factories.dataset_version(second, cases=[tool_case("x", "hi")], checks=[TOOLS_CHECK])
    GateDataset.objects.create(agent=good_version.agent, dataset=second)  # chosen for it
    request = RequestPublication(acting_user=author, agent_version=good_version).execute()
    first, _ = request.runs.order_by("pk")
    Run.objects.filter(pk=first.pk).update(status=RunStatus.COMPLETED)
    run_finished.send(sender=Run, run_id=first.pk, status="completed")
    request.refresh_from_db()
    assert request.state == RequestState.EVALUATING and request.decision == {}


def test_a_repeated_run_finished_signal_decides_only_once(author, good_version, policy):
    request = finish_gate_runs(
        RequestPublication(acting_user=author, agent_version=good_version).execute()
    )
    decided = request.decision
    run = request.runs.get()
    run_finished.send(sender=Run, run_id=run.pk, status="completed")
    assert DecidePublishRequest(publish_request_id=request.pk).execute() is None
    request.refresh_from_db()
    assert request.decision == decided
    assert AuditEntry.objects.filter(action="governance.request.decide").count() == 1


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.RUNNING])
def test_no_decision_while_a_run_is_not_terminal(status, author, good_version, policy):
    request = RequestPublication(acting_user=author, agent_version=good_version).execute()
    Run.objects.filter(pk=request.runs.get().pk).update(status=status)
    assert DecidePublishRequest(publish_request_id=request.pk).execute() is None
    request.refresh_from_db()
    assert request.state == RequestState.EVALUATING


def test_the_decision_says_which_checks_counted_as_informative_and_why(
    author, good_version, policy
):
    from evaluations.models import Check, CheckResult

    request = RequestPublication(acting_user=author, agent_version=good_version).execute()
    run = request.runs.get()
    gated = Check.objects.create(
        dataset_version=run.dataset_version,
        label="Polite",
        kind="custom",
        params={"criterion": "The answer is polite.", "anchors": "0 = rude, 1 = polite"},
        threshold=0.5,
        requires_calibration=True,
        min_labels=5,
        position=9,
    )
    for trial in run.trials.all():
        CheckResult.objects.create(
            trial=trial, check_config=gated, score=0.0, status="failed", blocking=False
        )
    decision = finish_gate_runs(request).decision
    [row] = decision["informative_checks"]
    assert row["run"] == run.pk and row["check"] == "Polite"
    assert row["informative"] == row["results"] == run.trials.count()
    assert "not calibrated: 0/5 human labels" in row["why"]


def test_a_decision_with_only_blocking_checks_lists_no_informative_check(passed_request):
    assert passed_request.decision["informative_checks"] == []
