"""Start, kill and stop real `qcluster` worker processes against the test database, and the
agent they run in those tests."""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
TEST_AGENT_CALLABLES = "agents.demo.,tests."
# The loopback servers the tests' agents and webhook receivers listen on (conftest does the same).
TEST_HOSTS = "*,127.0.0.1"


def test_database_url():
    """The URL of the database the tests are using (the test database, not the main one)."""
    s = connection.settings_dict
    if connection.vendor == "postgresql":
        host = s.get("HOST") or "127.0.0.1"
        port = s.get("PORT") or 5432
        auth = s.get("USER") or "postgres"
        if s.get("PASSWORD"):
            auth += f":{s['PASSWORD']}"
        return f"postgres://{auth}@{host}:{port}/{s['NAME']}"
    return f"sqlite:///{s['NAME']}"


@pytest.fixture
def broker_mode():
    """Tasks go to the real broker (the ORM, here), not in-process."""
    from django_q.conf import Conf

    Conf.SYNC = False
    yield
    Conf.SYNC = True


def start_cluster(log_path, **env):
    environment = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "SHERLOCK_WORKERS": "2",
        "PYTHONUNBUFFERED": "1",
        **env,
    }
    environment.pop("SHERLOCK_Q_SYNC", None)
    # The agents under test live in tests/: let the workers import them (as conftest does).
    environment.setdefault("SHERLOCK_AGENT_CALLABLES", TEST_AGENT_CALLABLES)
    environment.setdefault("SHERLOCK_AGENT_HOSTS", TEST_HOSTS)
    environment.setdefault("SHERLOCK_WEBHOOK_HOSTS", TEST_HOSTS)
    log = open(log_path, "ab")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "qcluster"],
        cwd=ROOT,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so we can stop all its children
    )
    process.log_file = log
    process.log_path = log_path
    return process


def stop_cluster(process, sig=signal.SIGTERM, timeout=30):
    """Stop a cluster by its pid; then make sure nothing of its process group is left."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # a worker orphaned by SIGKILL of the sentinel
    process.log_file.close()


def kill_cluster(process):
    """SIGKILL the cluster's whole process group at once (by its pid, which is the group's id):
    the main process, the sentinel and every worker die mid-flight, like a machine that lost
    power. Returns once none of them is left."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    assert wait_for(lambda: not _group_alive(process.pid), timeout=10)
    process.log_file.close()


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def clusters_idle(broker):
    """How many clusters report themselves ready and idle through the broker (Redis only: the
    ORM broker keeps these stats in each process's own cache)."""
    from django_q.conf import Conf
    from django_q.status import Stat

    return sum(stat.status == Conf.IDLE for stat in Stat.get_all(broker=broker))


def wait_for(predicate, timeout=90, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def logged_agent(case, **_):
    """An agent under test for worker processes: writes one line per call to the file named by
    SHERLOCK_TEST_AGENT_LOG (when the call starts), then works for SHERLOCK_TEST_AGENT_DELAY."""
    with open(os.environ["SHERLOCK_TEST_AGENT_LOG"], "a") as log:
        log.write(f"{case['id']}\n")
    time.sleep(float(os.environ.get("SHERLOCK_TEST_AGENT_DELAY", "0.05")))
    return {"output": f"done by {os.getpid()}", "tool_calls": []}


def agent_calls(path):
    """The case ids the logged agent was called with, one per call."""
    path = Path(path)
    return path.read_text().split() if path.exists() else []


class Every:
    """`step()` every `seconds` in a thread of its own, from the `with` block's start to its
    end, keeping what each step returns in `results`; `after()` runs in that thread when it
    stops (a thread that used the ORM closes its own connection: `lambda: connection.close()`,
    looked up in that thread, not `connection.close` bound to the caller's)."""

    def __init__(self, seconds, step, *, name, after=None):
        self.seconds, self.step, self.after = seconds, step, after
        self.results, self.done = [], threading.Event()
        self.thread = threading.Thread(target=self._loop, name=name)

    def _loop(self):
        try:
            while not self.done.wait(self.seconds):
                self.results.append(self.step())
        finally:
            if self.after is not None:
                self.after()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
