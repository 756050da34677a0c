"""A real `qcluster` process runs a small evaluation end to end and is stopped by its pid."""

import os

import pytest

from evaluations.actions.start_run import StartRun
from evaluations.models import CheckResult, Run, Trial
from tests import factories
from tests.workers import start_cluster, stop_cluster, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def broker_mode():
    """Tasks go to the real broker (the ORM, here), not in-process."""
    from django_q.conf import Conf

    Conf.SYNC = False
    yield
    Conf.SYNC = True


def test_a_real_worker_process_runs_an_evaluation(live_db, broker_mode, tmp_path):
    builder = factories.user("builder", role="Builder")
    version = factories.agent_version(callable_path="tests.agents_under_test.slow")
    dataset_version = factories.dataset_version(
        cases=[(f"case-{i}", f"question {i}", {}) for i in range(6)],
        checks=[
            {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
        ],
    )
    run = StartRun(
        acting_user=builder, agent_version=version, dataset_version=dataset_version, repetitions=2
    ).execute()  # commits: the shards go to the ORM broker
    cluster = start_cluster(tmp_path / "qcluster.log")
    try:
        finished = wait_for(lambda: Run.objects.get(pk=run.pk).status == "completed", timeout=60)
    finally:
        stop_cluster(cluster)
    assert cluster.returncode is not None  # the process is gone
    log = (tmp_path / "qcluster.log").read_text(errors="replace")
    assert finished, log[-4000:]
    run.refresh_from_db()
    assert run.trials_done == 12 and run.summary["passed"] == 6
    trials = list(Trial.objects.filter(run=run))
    assert all(t.status == "completed" and t.attempts == 1 for t in trials)
    # Executed by the worker process, not by this one.
    assert all(f":{os.getpid()}" not in t.worker for t in trials)
    assert all(str(os.getpid()) not in t.transcript["output"] for t in trials)
    assert CheckResult.objects.filter(trial__run=run).count() == 12
