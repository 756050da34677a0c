"""More than one machine: with PostgreSQL and Redis, two `qcluster` processes share one run.

Both processes run on this machine, but they share nothing except the database and the queue,
which is all that two machines would share (docs/scale-out.md). The queue lives in a Redis
database of its own (REDIS_DB); only its queue key is ever deleted.
"""

import socket

import pytest
from django.db import connection

from evaluations.actions.start_run import StartRun
from evaluations.engine import enqueue_run
from evaluations.models import CheckResult, Run, Trial
from tests.support import factories, workers
from tests.support.workers import agent_calls, clusters_idle, start_cluster, stop_cluster, wait_for

pytestmark = pytest.mark.slow
broker_mode = workers.broker_mode

REDIS_URL = "redis://127.0.0.1:6379/13"


@pytest.fixture
def redis_broker():
    """django-q2's Redis broker on our own Redis database, its queue emptied before and after."""
    import redis
    from django_q.brokers.redis_broker import Redis
    from django_q.conf import Conf

    if connection.vendor != "postgresql":
        pytest.skip("scale-out needs PostgreSQL (DATABASE_URL=postgres://...), not a SQLite file")
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=0.5)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_URL}: {exc}")
    broker = Redis(list_key=Conf.CLUSTER_NAME)
    broker.connection = client
    client.delete(broker.list_key)
    yield broker
    client.delete(broker.list_key)


def test_two_workers_share_one_run_through_postgresql_and_redis(
    live_db, broker_mode, redis_broker, settings, tmp_path
):
    settings.SHERLOCK_SHARD_SIZE = 2  # where the shards are cut: here, by enqueue_run
    builder = factories.user("builder", role="Builder")
    version = factories.agent_version(callable_path="tests.support.workers.logged_agent")
    dataset_version = factories.dataset_version(
        cases=[(f"case-{i:02}", f"question {i}", {}) for i in range(16)],
        checks=[{"label": "Shape", "kind": "output_type", "params": {"type": "text"}}],
    )
    env = {
        "REDIS_URL": REDIS_URL,
        "SHERLOCK_WORKERS": "1",
        "SHERLOCK_RUN_CONCURRENCY": "2",
        "SHERLOCK_TEST_AGENT_DELAY": "0.2",
        "SHERLOCK_TEST_AGENT_LOG": str(tmp_path / "calls"),
    }
    clusters = [start_cluster(tmp_path / f"machine-{n}.log", **env) for n in (1, 2)]
    try:
        assert wait_for(lambda: clusters_idle(redis_broker) == 2, timeout=30)
        run = StartRun(  # its own enqueue goes to the test settings' ORM queue, unread here
            acting_user=builder, agent_version=version, dataset_version=dataset_version
        ).execute()
        enqueue_run(run.pk, broker=redis_broker)
        completed = wait_for(lambda: Run.objects.get(pk=run.pk).status == "completed", timeout=60)
    finally:
        for cluster in clusters:
            stop_cluster(cluster)
    logs = [c.log_path.read_text(errors="replace")[-2000:] for c in clusters]
    assert completed, logs

    trials = list(Trial.objects.filter(run=run).select_related("case"))
    by_worker = {}
    for trial in trials:
        by_worker.setdefault(trial.worker, []).append(trial.case.key)
    # Split between the two worker processes (one per cluster), each trial run once.
    assert len(by_worker) == 2, by_worker
    assert all(worker.startswith(f"{socket.gethostname()}:") for worker in by_worker)
    assert all(len(keys) >= 2 for keys in by_worker.values()), by_worker
    assert all(t.status == "completed" and t.attempts == 1 for t in trials)
    assert sorted(agent_calls(tmp_path / "calls")) == sorted(t.case.key for t in trials)
    assert CheckResult.objects.filter(trial__run=run).count() == 16
