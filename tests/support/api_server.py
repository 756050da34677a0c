"""A real Sherlock web server on the test database, for tests that call the API over HTTP as a
client on another machine does (the `sherlock` client's contract, docs/client.md).

`runserver` in a process of its own, on a free loopback port, with django-q2 in sync mode
(`SHERLOCK_Q_SYNC`): the tasks a request enqueues (a finished client run's scoring) run in the
server process before it answers, so a test reads the outcome right after the call. Use it
with `live_db` (tests/conftest.py): the server sees only committed rows.
"""

import contextlib
import os
import socket
import subprocess
import sys

from tests.support.workers import (
    ROOT,
    TEST_AGENT_CALLABLES,
    TEST_HOSTS,
    test_database_url,
    wait_for,
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def api_server(log_path, **env):
    """Yield the base URL (`http://127.0.0.1:<port>`) of a server started for the block."""
    port = free_port()
    environment = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "PYTHONUNBUFFERED": "1",
        "SHERLOCK_Q_SYNC": "1",
        "SHERLOCK_AGENT_CALLABLES": TEST_AGENT_CALLABLES,
        "SHERLOCK_AGENT_HOSTS": TEST_HOSTS,
        "SHERLOCK_WEBHOOK_HOSTS": TEST_HOSTS,
        **env,
    }
    log = open(log_path, "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    def answers():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        assert wait_for(answers, timeout=60), log_path.read_text()
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
