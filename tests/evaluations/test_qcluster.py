"""Real `qcluster` processes: one runs a small evaluation end to end and is stopped by its pid;
another is killed with SIGKILL in the middle of a run, and the next one completes the run with
every trial executed exactly once."""

import os
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from evaluations.actions.start_run import StartRun
from evaluations.models import CheckResult, Run, Trial
from tests.support import factories, workers
from tests.support.workers import agent_calls, kill_cluster, start_cluster, stop_cluster, wait_for

pytestmark = pytest.mark.slow
broker_mode = workers.broker_mode


def test_a_real_worker_process_runs_an_evaluation(live_db, broker_mode, tmp_path):
    builder = factories.user("builder", role="Builder")
    version = factories.agent_version(callable_path="tests.support.agents_under_test.slow")
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


def test_a_killed_cluster_loses_nothing_and_a_finished_trial_never_runs_again(
    live_db, broker_mode, settings, tmp_path
):
    settings.SHERLOCK_SHARD_SIZE = 2  # StartRun cuts the shards here: ten tasks of two trials
    builder = factories.user("builder", role="Builder")
    version = factories.agent_version(callable_path="tests.support.workers.logged_agent")
    dataset_version = factories.dataset_version(
        cases=[(f"case-{i:02}", f"question {i}", {}) for i in range(20)],
        checks=[
            {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
        ],
    )
    env = {
        "SHERLOCK_RUN_CONCURRENCY": "2",
        "SHERLOCK_TRIAL_LEASE_SECONDS": "5",
        "SHERLOCK_TEST_AGENT_DELAY": "0.3",
    }
    run = StartRun(
        acting_user=builder, agent_version=version, dataset_version=dataset_version
    ).execute()
    trials = Trial.objects.filter(run=run)

    first = start_cluster(
        tmp_path / "first.log", SHERLOCK_TEST_AGENT_LOG=str(tmp_path / "first.calls"), **env
    )
    try:
        mid_run = wait_for(
            lambda: (
                trials.filter(status="completed").count() >= 4
                and trials.filter(status="running").exists()
            ),
            timeout=60,
        )
    finally:
        kill_cluster(first)
    killed_at = timezone.now()
    assert mid_run, (tmp_path / "first.log").read_text(errors="replace")[-3000:]
    before = {t.case.key: t for t in trials.select_related("case")}
    finished = {key for key, t in before.items() if t.status == "completed"}
    in_flight = {key for key, t in before.items() if t.status == "running"}
    assert finished and in_flight and len(finished) + len(in_flight) < 20  # truly mid-run

    # The reaper hands a trial back once its lease has run out; the next cluster reaps as its
    # workers start, so start it then. A dead worker renews no lease: each runs out at most
    # one lease (5 s) after the kill.
    expiry = max(t.lease_expires_at for t in before.values() if t.status == "running")
    assert expiry <= killed_at + timedelta(seconds=5)
    time.sleep(max(0.0, (expiry - timezone.now()).total_seconds()) + 0.2)
    second = start_cluster(
        tmp_path / "second.log", SHERLOCK_TEST_AGENT_LOG=str(tmp_path / "second.calls"), **env
    )
    try:
        completed = wait_for(lambda: Run.objects.get(pk=run.pk).status == "completed", timeout=60)
    finally:
        stop_cluster(second)
    assert completed, (tmp_path / "second.log").read_text(errors="replace")[-3000:]

    after = {t.case.key: t for t in trials.select_related("case")}
    calls_after_kill = agent_calls(tmp_path / "second.calls")
    assert all(t.status == "completed" for t in after.values())
    # A finished trial never ran again: not called, not re-claimed, not rewritten.
    for key in finished:
        assert key not in calls_after_kill
        assert after[key].attempts == 1 and after[key].finished_at == before[key].finished_at
    # Every other trial's agent call happened once after the kill; the ones that were in
    # flight were claimed a second time (their first attempt died with the worker).
    assert sorted(calls_after_kill) == sorted(set(after) - finished)
    assert all(after[key].attempts == 2 for key in in_flight)
    assert all(after[key].attempts == 1 for key in set(after) - finished - in_flight)
    # Before the kill, no trial was called twice either.
    first_calls = agent_calls(tmp_path / "first.calls")
    assert len(first_calls) == len(set(first_calls))
    assert CheckResult.objects.filter(trial__run=run).count() == 20
    run.refresh_from_db()
    assert run.trials_done == 20 and run.summary["passed"] == 20
