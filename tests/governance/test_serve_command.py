"""`manage.py serve` as a person starts it, on loopback: its static handler serves the pages'
files and answers a path that climbs out of the static directories with 404 (issue 22: Django's
handler let the finder's SuspiciousFileOperation through as a 500)."""

import http.client
import os
import signal
import socket
import subprocess
import sys

import pytest

from tests.support import workers

TRAVERSALS = (
    "/static/../..",
    "/static/../../etc/passwd",
    "/static/%2e%2e/%2e%2e/etc/passwd",
    "/static/..%2f..%2fsherlock/settings.py",
    "/static/vendor/../../../manage.py",
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_of(port, path):
    """The status answered to `path`, sent as it is (http.client does not normalise it)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


@pytest.fixture
def served(live_db, tmp_path):
    port = free_port()
    env = {**os.environ, "DATABASE_URL": workers.test_database_url(), "PYTHONUNBUFFERED": "1"}
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, str(workers.ROOT / "manage.py"), "serve", f"127.0.0.1:{port}"],
        cwd=workers.ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    def answers():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        assert workers.wait_for(answers, timeout=60), (tmp_path / "serve.log").read_text()
        yield port
    finally:
        process.send_signal(signal.SIGINT)  # what Ctrl-C sends: both children stop
        process.wait(timeout=30)
        log.close()


def test_serve_answers_static_traversal_with_404_and_still_serves_static_files(served):
    assert status_of(served, "/static/admin/css/base.css") == 200
    assert status_of(served, "/static/vendor/htmx-2.0.11.min.js") == 200
    assert status_of(served, "/static/no-such-file.css") == 404
    for path in TRAVERSALS:
        assert status_of(served, path) == 404, path
