"""Leases are renewed while a worker holds its trials: a trial that takes longer than a lease is
not handed back and run again behind the worker's back, a lease another worker took over is
never extended by the old holder, and renewing costs one UPDATE for all the trials held.

A worker that dies renews nothing: its trials are handed back at most one lease after it died,
and run again once (a real `qcluster` killed with SIGKILL)."""

import asyncio
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from evaluations.actions.start_run import StartRun
from evaluations.engine import reap
from evaluations.engine.database import Database
from evaluations.engine.shards import Claims, Work
from evaluations.engine.trials import claim_trial, claim_trials, renew_leases
from evaluations.models import CheckResult, JudgeCall, Run, Trial
from tests.evaluations.test_engine_loop import agent_questions, chat_agent, judged_dataset
from tests.support import factories, workers
from tests.support.llm_server import Reply, schema_responder
from tests.support.workers import (
    Every,
    agent_calls,
    kill_cluster,
    start_cluster,
    stop_cluster,
    wait_for,
)

broker_mode = workers.broker_mode


def planned(builder, cases):
    version = factories.agent_version()
    dataset_version = factories.dataset_version(
        cases=[(f"c{i}", "q", {}) for i in range(cases)],
        checks=[{"label": "Shape", "kind": "output_type", "params": {"type": "text"}}],
    )
    run = factories.planned_run(builder, version, dataset_version)
    return run, list(Trial.objects.filter(run=run).order_by("pk"))


def taken_over(trial):
    """What happens to a claim whose renewals stopped reaching the database: its lease runs out,
    the reaper hands the trial back to `pending` (as `reap` does, without enqueueing it, which
    would run it here in django-q2's sync mode), and another worker claims it."""
    Trial.objects.filter(pk=trial.pk, attempts=trial.attempts).update(
        status="pending", lease_expires_at=None
    )
    other = Trial.objects.get(pk=trial.pk)
    assert claim_trial(other) == trial.attempts + 1
    Trial.objects.filter(pk=trial.pk).update(worker="other:1")
    return Trial.objects.get(pk=trial.pk)


def expiring(trials, when):
    Trial.objects.filter(pk__in=[t.pk for t in trials]).update(lease_expires_at=when)


def leases(trials):
    return dict(
        Trial.objects.filter(pk__in=[t.pk for t in trials]).values_list("pk", "lease_expires_at")
    )


def test_renewing_extends_every_lease_held_in_one_update_and_never_another_workers(
    builder, settings, django_assert_num_queries
):
    run, trials = planned(builder, 4)
    Trial.objects.filter(pk=trials[3].pk).update(attempts=1)  # handed back once before
    trials[3].attempts = 1
    held = {trial.pk: attempt for trial, attempt in claim_trials(trials)}
    assert held[trials[3].pk] == 2  # two attempt numbers among the claims held
    soon = timezone.now() + timedelta(seconds=1)
    expiring(trials, soon)  # about to run out

    with django_assert_num_queries(1):  # all still ours: one UPDATE, nothing read back
        assert renew_leases(held) == set(held)
    renewed = leases(trials)
    assert all(lease > soon + timedelta(seconds=500) for lease in renewed.values())

    other = taken_over(trials[1])
    with django_assert_num_queries(2):  # one UPDATE, and which rows it moved: one was lost
        kept = renew_leases(held)
    assert kept == set(held) - {trials[1].pk}
    row = Trial.objects.get(pk=trials[1].pk)
    # The other worker's claim is untouched: its attempt, its worker, its lease.
    assert (row.status, row.attempts, row.worker) == ("running", 2, "other:1")
    assert row.lease_expires_at == other.lease_expires_at
    # A trial that was written is not renewed either (its lease is gone with its claim).
    Trial.objects.filter(pk=trials[0].pk).update(status="completed", lease_expires_at=None)
    assert renew_leases(held) == {trials[2].pk, trials[3].pk}
    assert Trial.objects.get(pk=trials[0].pk).lease_expires_at is None
    assert renew_leases({}) == set()


def test_a_shard_renews_the_trials_it_runs_and_those_claimed_ahead_and_drops_a_lost_one(
    live_db, builder
):
    run, trials = planned(builder, 4)
    db = Database(1)

    async def hold():
        claims = Claims(Work(run, trials), db, slots=12)  # three claimed at a time
        running = await claims.next()
        assert len(claims.ready) == 2 and len(claims.held) == 3
        ours = [running[0], claims.ready[0][0], claims.ready[1][0]]
        soon = timezone.now() + timedelta(seconds=1)
        await db.run(expiring, ours, soon)
        before = await db.run(leases, trials)
        # The one waiting last in `ready` is taken over (its renewals did not reach the
        # database in time), then a round runs.
        other = await db.run(taken_over, ours[2])
        await claims.renew_held()
        after = await db.run(leases, trials)
        return claims, ours, soon, before, other, after

    try:
        claims, ours, soon, before, other, after = asyncio.run(hold())
    finally:
        db.close()
    # The trial a slot runs and the one waiting in `ready` were renewed.
    assert after[ours[0].pk] > soon + timedelta(seconds=500)
    assert after[ours[1].pk] > soon + timedelta(seconds=500)
    # The lost one kept the other worker's lease, is held no more, and is not handed to a slot.
    assert after[ours[2].pk] == other.lease_expires_at
    assert set(claims.held) == {ours[0].pk, ours[1].pk}
    assert [trial.pk for trial, _ in claims.ready] == [ours[1].pk]
    assert before[trials[3].pk] is None  # never claimed, never renewed
    assert after[trials[3].pk] is None
    claims.release(ours[0])
    assert set(claims.held) == {ours[1].pk}


def test_a_trial_that_takes_longer_than_its_lease_is_not_handed_back_and_runs_once(
    live_db, judge_settings, llm_server, builder
):
    # A lease of 5 s (the setting's minimum), and trials of about 7 s: the agent answers in
    # 3 s, the judge in 4 s. Without renewals the reaper hands both back after 5 s and runs
    # them again (in this process: django-q2's sync mode), agent and judge paid twice.
    judge_settings.SHERLOCK_TRIAL_LEASE_SECONDS = 5
    judge_settings.SHERLOCK_RUN_CONCURRENCY = 2
    judge_settings.SHERLOCK_JUDGE_TIMEOUT = 30

    def answer(request):
        if request.get("response_format"):
            reply = schema_responder(request)
            reply.latency = 4.0
            return reply
        return Reply(content="ok", latency=3.0)

    llm_server.responder = answer
    version = chat_agent(llm_server)
    dataset_version = judged_dataset(2)
    started = timezone.now()
    # The reaper on its schedule, much faster: a pass every 0.25 s in a thread of its own.
    with Every(0.25, reap, name="reaper", after=lambda: connection.close()) as reaper:
        run = StartRun(  # commits; the shard runs here, on the loop
            acting_user=builder, agent_version=version, dataset_version=dataset_version
        ).execute()
    took = timezone.now() - started
    assert took > timedelta(seconds=6.5)  # longer than the lease, indeed
    assert reaper.results  # the reaper looked, all along
    assert not any(report["handed_back"] for report in reaper.results), reaper.results
    run.refresh_from_db()
    assert run.status == "completed" and run.trials_done == 2 and run.trials_error == 0
    trials = list(Trial.objects.filter(run=run))
    assert all(t.status == "completed" and t.attempts == 1 for t in trials)
    assert all(t.lease_expires_at is None for t in trials)
    # Each trial's agent call and judge question were made once; one set of results each.
    assert sorted(agent_questions(llm_server)) == ["question 0", "question 1"]
    assert JudgeCall.objects.filter(run=run).count() == 2
    assert CheckResult.objects.filter(trial__run=run).count() == 2


@pytest.mark.slow
def test_a_killed_worker_renews_no_more_and_its_trials_are_handed_back_one_lease_later(
    live_db, broker_mode, tmp_path
):
    builder = factories.user("builder", role="Builder")
    version = factories.agent_version(callable_path="tests.support.workers.logged_agent")
    dataset_version = factories.dataset_version(
        cases=[(f"case-{i}", f"question {i}", {}) for i in range(2)],
        checks=[
            {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
        ],
    )
    run = StartRun(
        acting_user=builder, agent_version=version, dataset_version=dataset_version
    ).execute()
    trials = Trial.objects.filter(run=run)
    env = {
        "SHERLOCK_WORKERS": "1",
        "SHERLOCK_RUN_CONCURRENCY": "2",
        "SHERLOCK_TRIAL_LEASE_SECONDS": "5",
    }
    first = start_cluster(
        tmp_path / "first.log",
        SHERLOCK_TEST_AGENT_LOG=str(tmp_path / "first.calls"),
        SHERLOCK_TEST_AGENT_DELAY="60",  # both trials run far longer than a lease
        **env,
    )
    lease = timedelta(seconds=5)

    def renewed():  # both running, and their leases extended past their claim's first one
        rows = list(trials.values_list("status", "started_at", "lease_expires_at"))
        return all(
            status == "running" and expires > started + lease + timedelta(seconds=1)
            for status, started, expires in rows
        )

    try:
        held = wait_for(renewed, timeout=60)
    finally:
        kill_cluster(first)
    killed_at = timezone.now()
    assert held, (tmp_path / "first.log").read_text(errors="replace")[-3000:]
    assert reap()["handed_back"] == 0  # their leases still run: nobody takes them yet
    # Nobody renews them any more: they run out at most one lease after the kill.
    expiry = max(trials.values_list("lease_expires_at", flat=True))
    assert expiry <= killed_at + lease
    time.sleep(max(0.0, (expiry - timezone.now()).total_seconds()) + 0.2)
    second = start_cluster(  # reaps as its worker starts
        tmp_path / "second.log", SHERLOCK_TEST_AGENT_LOG=str(tmp_path / "second.calls"), **env
    )
    try:
        completed = wait_for(lambda: Run.objects.get(pk=run.pk).status == "completed", timeout=60)
    finally:
        stop_cluster(second)
    assert completed, (tmp_path / "second.log").read_text(errors="replace")[-3000:]
    # Each trial was called once by the killed worker and once again after it, and written once.
    assert sorted(agent_calls(tmp_path / "first.calls")) == ["case-0", "case-1"]
    assert sorted(agent_calls(tmp_path / "second.calls")) == ["case-0", "case-1"]
    assert {(t.status, t.attempts) for t in trials} == {("completed", 2)}
    assert CheckResult.objects.filter(trial__run=run).count() == 2
