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
            str(version.number),
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
    assert "no version '99'" in done.stderr
    assert not Run.objects.exists()
