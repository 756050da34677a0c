"""The engine's event loop: calls in flight no longer hold database connections.

The stall it fixes: every trial in flight was a thread with a database connection of its own,
so two workers at 64 trials each asked PostgreSQL (max_connections 100) for more connections
than it has; the writer's connections were refused too, and the trials it held stayed
`running` until their leases ran out. Here many calls are in flight while the shard opens no
more than `SHERLOCK_DB_CONNECTIONS` + 2 connections, and a worker killed with 256 calls in
flight loses no trial and finishes none twice.
"""

import threading
import time

import pytest
from django.db.backends.signals import connection_created
from django.utils import timezone

from agents.models import AgentVersion
from evaluations.actions.start_run import StartRun
from evaluations.models import CheckResult, JudgeCall, Run, Trial
from tests.support import factories, workers
from tests.support.judge_fixtures import JUDGE_MODEL
from tests.support.llm_server import schema_responder
from tests.support.workers import Every, kill_cluster, start_cluster, stop_cluster, wait_for

broker_mode = workers.broker_mode


def chat_agent(llm_server):
    return AgentVersion.objects.create(
        agent=factories.agent(),
        number=1,
        adapter="openai_chat",
        config={"base_url": llm_server.url, "model": "agent-model", "max_retries": 0},
    )


def judged_dataset(cases):
    return factories.dataset_version(
        cases=[(f"case-{i:03}", f"question {i}", {}) for i in range(cases)],
        checks=[
            {
                "label": "Polite",
                "kind": "custom",
                "threshold": 0.5,
                "params": {"criterion": "It is polite.", "anchors": "0 = no, 1 = yes"},
            }
        ],
    )


def agent_questions(llm_server):
    """The case inputs of the agent calls the server answered (judge requests ask for JSON)."""
    return [
        r["messages"][-1]["content"] for r in llm_server.requests if not r.get("response_format")
    ]


class ConnectionThreads:
    """The threads other than this one that open a database connection while it is connected
    to `connection_created` (a thread keeps its connection until it closes it)."""

    def __init__(self):
        self.names = set()
        self.caller = threading.get_ident()

    def __call__(self, sender, connection, **kwargs):
        if threading.get_ident() != self.caller:
            self.names.add(threading.current_thread().name)


def test_calls_in_flight_do_not_each_hold_a_database_connection(
    live_db, judge_settings, llm_server, builder
):
    judge_settings.SHERLOCK_RUN_CONCURRENCY = 48
    judge_settings.SHERLOCK_DB_CONNECTIONS = 2
    judge_settings.SHERLOCK_JUDGE_TIMEOUT = 10
    llm_server.latency = 0.5
    version = chat_agent(llm_server)
    dataset_version = judged_dataset(48)
    opened = ConnectionThreads()
    connection_created.connect(opened)
    try:
        run = StartRun(  # commits; django-q2's sync mode runs the shard here, on the loop
            acting_user=builder, agent_version=version, dataset_version=dataset_version
        ).execute()
    finally:
        connection_created.disconnect(opened)
    run.refresh_from_db()
    assert run.status == "completed" and run.trials_done == 48 and run.trials_error == 0
    # All 48 trials' calls were in flight together (a thread each would have meant 48
    # connections), through the database threads and the writer alone.
    assert llm_server.peak_in_flight >= 40  # (a busy machine may start a few late)
    assert len(opened.names) <= 2 + 1, opened.names
    assert JudgeCall.objects.filter(run=run).count() == 48


def threads_in_flight(server):
    """The judge answers the server is waiting out and the threads alive in this process
    other than the server's own (one per request in flight)."""
    ours = [t.name for t in threading.enumerate() if "process_request_thread" not in t.name]
    return server.in_flight, ours


def test_many_trials_judge_calls_overlap_on_the_loop_without_a_thread_each(
    live_db, judge_settings, llm_server, builder
):
    # The checks' judge questions are awaited on the shard's loop (AsyncOpenAI), not
    # asked from a pool thread each; 64 judge calls in flight take no more threads than one.
    judge_settings.SHERLOCK_RUN_CONCURRENCY = 64
    judge_settings.SHERLOCK_DB_CONNECTIONS = 2
    judge_settings.SHERLOCK_JUDGE_TIMEOUT = 10

    def answer(request):  # the agent at once; the judge takes 2 s, so only it is in flight
        reply = schema_responder(request)
        if request.get("response_format"):
            reply.latency = 2.0
        return reply

    llm_server.responder = answer
    version = chat_agent(llm_server)
    dataset_version = judged_dataset(64)
    with Every(0.02, lambda: threads_in_flight(llm_server), name="sampler") as sampler:
        run = StartRun(
            acting_user=builder, agent_version=version, dataset_version=dataset_version
        ).execute()
    run.refresh_from_db()
    assert run.status == "completed" and run.trials_done == 64 and run.trials_error == 0
    busy = [names for in_flight, names in sampler.results if in_flight >= 40]
    assert busy, max(n for n, _ in sampler.results)  # (a busy machine may start a few late)
    # This thread (the loop's), the sampler, the server's, the database threads, the writer,
    # and a few the SDKs keep: not one per judge call (a pool thread each would be 64 more).
    most = max(busy, key=len)
    assert len(most) <= 16, sorted(most)
    assert len([name for name in most if name.startswith("trial_")]) <= 4, sorted(most)
    assert JudgeCall.objects.filter(run=run).count() == 64


@pytest.mark.slow
def test_a_worker_killed_with_256_calls_in_flight_loses_nothing_and_finishes_nothing_twice(
    live_db, broker_mode, settings, llm_server, tmp_path
):
    settings.SHERLOCK_SHARD_SIZE = 300  # one shard: a single worker takes it all
    llm_server.latency = 3.0  # long enough for all 256 first calls to be in flight together
    builder = factories.user("builder", role="Builder")
    version = chat_agent(llm_server)
    run = StartRun(
        acting_user=builder, agent_version=version, dataset_version=judged_dataset(300)
    ).execute()
    trials = Trial.objects.filter(run=run)
    env = {
        "SHERLOCK_WORKERS": "1",
        "SHERLOCK_RUN_CONCURRENCY": "256",
        "SHERLOCK_TRIAL_LEASE_SECONDS": "20",  # longer than a trial on a busy machine
        "SHERLOCK_JUDGE_BASE_URL": llm_server.url,
        "SHERLOCK_JUDGE_MODEL": JUDGE_MODEL,
        "SHERLOCK_JUDGE_TIMEOUT": "30",
    }

    first = start_cluster(tmp_path / "first.log", **env)
    try:
        in_flight = wait_for(lambda: llm_server.in_flight >= 256, timeout=60)
    finally:
        kill_cluster(first)
    assert in_flight, (tmp_path / "first.log").read_text(errors="replace")[-3000:]
    # Before the kill, no trial's agent call was made twice (the judge's questions are not
    # counted: its cache would hide a second one).
    asked = agent_questions(llm_server)
    assert len(asked) == len(set(asked))
    before = {t.pk: t for t in trials.all()}
    finished = {pk for pk, t in before.items() if t.status == "completed"}
    running = {pk for pk, t in before.items() if t.status == "running"}
    assert len(running) >= 256 and len(finished) + len(running) <= 300

    # The next cluster reaps as its worker starts: start it once the leases have run out.
    expiry = max(t.lease_expires_at for t in before.values() if t.status == "running")
    time.sleep(max(0.0, (expiry - timezone.now()).total_seconds()) + 0.2)
    second = start_cluster(tmp_path / "second.log", **env)
    try:
        completed = wait_for(lambda: Run.objects.get(pk=run.pk).status == "completed", timeout=90)
    finally:
        stop_cluster(second)
    assert completed, (tmp_path / "second.log").read_text(errors="replace")[-3000:]

    after = {t.pk: t for t in trials.all()}
    # Every trial's agent call was made once, and again only for those in flight at the kill.
    assert len(agent_questions(llm_server)) == 300 + len(running)
    assert {t.status for t in after.values()} == {"completed"}, {t.error for t in after.values()}
    for pk in finished:  # finished before the kill: never claimed, run or written again
        assert after[pk].attempts == 1 and after[pk].finished_at == before[pk].finished_at
    assert all(after[pk].attempts == 2 for pk in running)  # its first attempt died in flight
    # One set of results per trial: the killed attempts wrote nothing.
    assert CheckResult.objects.filter(trial__run=run).count() == 300
    assert JudgeCall.objects.filter(run=run).count() == 300
    assert sorted(JudgeCall.objects.filter(run=run).values_list("trial_id", flat=True)) == sorted(
        after
    )
    run.refresh_from_db()
    assert run.trials_done == 300 and run.trials_error == 0
