"""`sherlock gate` and `sherlock verify` against a live Sherlock: a `client` version's
publication requested, its gate run (waiting for the client) fulfilled by the team's task, the
decision awaited; the deploy guard exits 0 only once a Publisher published the version, and
says who and on which decision."""

import json

import pytest

from agents.models import AgentVersion
from evaluations.models import Run
from governance.actions.publish_version import PublishVersion
from governance.models import PublishRequest
from tests.client.conftest import sherlock

pytestmark = pytest.mark.slow
TASKS = "tests.client.tasks_under_test"


def ensure_client_version(live, name):
    done = sherlock(
        [
            "run",
            "--agent",
            "refund-bot",
            "--dataset",
            "refunds",
            "--task",
            f"{TASKS}:refunds",
            "--version",
            name,
            "--purpose",
            "manual",
        ],
        live.url,
        live.key,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return AgentVersion.objects.get(agent=live.agent, name=name)


def test_gate_fulfils_the_client_gate_run_and_verify_guards_the_deploy(
    live_sherlock, publisher, tmp_path
):
    version = ensure_client_version(live_sherlock, "abc123")
    guard = ["verify", "--agent", "refund-bot", "--version", "abc123"]
    before = sherlock(guard, live_sherlock.url, live_sherlock.key)
    assert before.returncode == 1 and "is not published" in before.stdout

    gate = sherlock(
        [
            "gate",
            "--agent",
            "refund-bot",
            "--version",
            "abc123",
            "--task",
            f"{TASKS}:refunds",
            "--json",
            str(tmp_path / "gate.json"),
            "--wait",
            "240",
        ],
        live_sherlock.url,
        live_sherlock.key,
    )
    assert gate.returncode == 0, gate.stdout + gate.stderr
    request = PublishRequest.objects.get(agent_version=version)
    assert request.state == "passed"
    [gate_run] = request.runs.all()
    assert gate_run.purpose == "gate" and gate_run.status == "completed"
    assert gate_run.source.get("config") == {"entrypoint": f"{TASKS}:refunds"}
    decided = json.loads((tmp_path / "gate.json").read_text())
    assert decided["state"] == "passed" and decided["exit_code"] == 0
    assert [r["run"] for r in decided["runs"]] == [gate_run.pk]

    still = sherlock(guard, live_sherlock.url, live_sherlock.key)
    assert still.returncode == 1  # passed is not published: a Publisher decides

    PublishVersion(acting_user=publisher, agent_version=version, reason="ship it").execute()
    after = sherlock(guard, live_sherlock.url, live_sherlock.key)
    assert after.returncode == 0, after.stdout + after.stderr
    assert "is published: by publisher" in after.stdout
    assert f"on decision {request.pk}" in after.stdout

    again = sherlock(
        ["gate", "--agent", "refund-bot", "--version", "abc123"],
        live_sherlock.url,
        live_sherlock.key,
    )
    assert again.returncode == 0  # already published: nothing requested again
    assert PublishRequest.objects.filter(agent_version=version).count() == 1


def test_a_blocked_gate_exits_1(live_sherlock):
    version = ensure_client_version(live_sherlock, "bad456")
    gate = sherlock(
        [
            "gate",
            "--agent",
            "refund-bot",
            "--version",
            "bad456",
            "--task",
            f"{TASKS}:no_refund",
            "--wait",
            "240",
        ],
        live_sherlock.url,
        live_sherlock.key,
    )
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert PublishRequest.objects.get(agent_version=version).state == "blocked"
    assert "blocked" in gate.stdout


def test_a_gate_blocked_by_trials_in_error_exits_2_not_1(live_sherlock):
    """The team's task raises on every case: the request is blocked (fail closed), but the
    verdict is incomplete (evidence missing, nothing failed), so `gate` exits 2 as `sherlock
    run` does for the same run."""
    version = ensure_client_version(live_sherlock, "e770r5")
    gate = sherlock(
        [
            "gate",
            "--agent",
            "refund-bot",
            "--version",
            "e770r5",
            "--task",
            f"{TASKS}:raises",
            "--wait",
            "240",
        ],
        live_sherlock.url,
        live_sherlock.key,
    )
    assert gate.returncode == 2, gate.stdout + gate.stderr
    request = PublishRequest.objects.get(agent_version=version)
    assert request.state == "blocked"
    assert request.decision["verdict"]["outcome"] == "incomplete"
    assert "the verdict is incomplete" in gate.stdout


def test_sherlock_run_takes_up_a_waiting_gate_run(live_sherlock):
    version = ensure_client_version(live_sherlock, "c0ffee")
    asked = sherlock(
        ["gate", "--agent", "refund-bot", "--version", "c0ffee", "--wait", "1"],
        live_sherlock.url,
        live_sherlock.key,
    )
    assert asked.returncode == 2  # no task: the gate run waits for the client
    assert "wait for the client" in asked.stderr
    [gate_run] = PublishRequest.objects.get(agent_version=version).runs.all()
    assert gate_run.status == "waiting"
    done = sherlock(
        [
            "run",
            "--agent",
            "refund-bot",
            "--dataset",
            "refunds",
            "--task",
            f"{TASKS}:refunds",
            "--version",
            "c0ffee",
        ],
        live_sherlock.url,
        live_sherlock.key,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    gate_run.refresh_from_db()
    assert gate_run.status == "completed"
    assert Run.objects.filter(agent_version=version).count() == 2  # the manual one, the gate's


def test_a_gate_with_insufficient_evidence_exits_2_and_says_so(live_sherlock):
    """The policy decides its case pass rate on the interval: every case passes, but a handful
    of cases cannot show a rate of at least 0.9, so `gate` exits 2 with the fourth word."""
    from governance.models import PublishingPolicy

    version = ensure_client_version(live_sherlock, "f3w0k")
    PublishingPolicy.objects.filter(agent=live_sherlock.agent).update(
        min_case_pass_rate=0.9, case_pass_rate_decides_on="interval"
    )
    gate = sherlock(
        [
            "gate",
            "--agent",
            "refund-bot",
            "--version",
            "f3w0k",
            "--task",
            f"{TASKS}:refunds",
            "--wait",
            "240",
        ],  # fmt: skip
        live_sherlock.url,
        live_sherlock.key,
    )
    assert gate.returncode == 2, gate.stdout + gate.stderr
    request = PublishRequest.objects.get(agent_version=version)
    assert request.state == "blocked"
    assert request.decision["verdict"]["outcome"] == "insufficient"
    assert "insufficient evidence: the case pass rate is undecided" in gate.stdout
