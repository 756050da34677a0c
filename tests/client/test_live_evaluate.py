"""`sherlock evaluate` against a live Sherlock: a run Sherlock executes itself (a `python`
agent), started over the API and awaited; its exit code and outputs are the server's verdict."""

import json

import pytest

from evaluations.models import Run
from tests.client.conftest import sherlock
from tests.client.live import CASES
from tests.support import factories

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("agent_callable", "code", "outcome"),
    [
        ("tests.client.tasks_under_test.billed_refund", 0, "passed"),
        ("tests.client.tasks_under_test.billed_silence", 1, "failed"),
    ],
)
def test_evaluate_awaits_a_run_sherlock_executes_and_exits_with_its_verdict(
    live_sherlock, agent_callable, code, outcome, tmp_path
):
    version = factories.agent_version(live_sherlock.agent, callable_path=agent_callable)
    done = sherlock(
        [
            "evaluate",
            "--agent",
            "refund-bot",
            "--version",
            f"v{version.number}",
            "--dataset",
            "refunds",
            "--repetitions",
            "2",
            "--json",
            str(tmp_path / "r.json"),
            "--markdown",
            str(tmp_path / "c.md"),
        ],
        live_sherlock.url,
        live_sherlock.key,
    )
    assert done.returncode == code, done.stdout + done.stderr
    run = Run.objects.get()
    assert run.status == "completed" and run.agent_version == version
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["outcome"] == outcome and result["run"] == run.pk
    assert len(result["cases"]) == CASES
    assert all(len(row["repetitions"]) == 2 for row in result["cases"])
    assert f"{outcome.upper()}: run {run.pk}" in done.stdout
    assert result["url"] in (tmp_path / "c.md").read_text()


def test_evaluate_of_an_unknown_version_exits_3(live_sherlock):
    done = sherlock(
        ["evaluate", "--agent", "refund-bot", "--version", "99", "--dataset", "refunds"],
        live_sherlock.url,
        live_sherlock.key,
    )
    assert done.returncode == 3
    assert "no version named '99'" in done.stderr
    assert not Run.objects.exists()


def test_evaluate_of_a_client_version_is_refused_at_once_naming_sherlock_run(live_sherlock):
    """Sherlock never calls a client version: `evaluate` would wait for uploads for good. It is
    refused before any run starts, naming the command that runs it; the API refuses it too."""
    from agents.models import AgentVersion
    from tests.support.governance import api_client

    version = AgentVersion.objects.create(
        agent=live_sherlock.agent, number=9, name="abc123", adapter="client", config={}
    )
    done = sherlock(
        ["evaluate", "--agent", "refund-bot", "--version", "abc123", "--dataset", "refunds"],
        live_sherlock.url,
        live_sherlock.key,
        timeout=60,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "runs on the client: run it with `sherlock run --agent refund-bot" in done.stderr
    refused = api_client(live_sherlock.builder).post(
        "/api/v1/runs/",
        {"agent_version": version.pk, "dataset_version": live_sherlock.dataset_version.pk},
    )
    assert refused.status_code == 400 and refused.json()["field"] == "agent_version"
    assert "sherlock run" in refused.json()["detail"]
    assert not Run.objects.exists()
