"""`manage.py serve` as a person starts it, on loopback: its static handler serves the pages'
files and answers a path that climbs out of the static directories with 404 (Django's
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


def test_a_body_over_the_limit_is_answered_413_unread_and_the_connection_closed(served):
    """A client declaring 50 MB and sending only the first 64 KB gets its 413 and then the
    connection's end: the server read none of the rest (Django's own server would wait for all
    50 MB after answering, to keep the connection)."""
    from tests.support import factories
    from tests.support.governance import api_key

    key = api_key(factories.user("tracer", role="Builder"))[1]
    declared = 50 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", served), timeout=30) as s:
        s.sendall(
            b"POST /api/v1/v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/x-protobuf\r\n"
            + f"Authorization: Token {key}\r\nContent-Length: {declared}\r\n\r\n".encode()
            + b"\x0a" * 65536
        )
        received = b""
        while True:  # until the server closes: it does not wait for the other 50 MB
            chunk = s.recv(65536)
            if not chunk:
                break
            received += chunk
    head = received.split(b"\r\n", 1)[0]
    assert head.startswith(b"HTTP/1.1 413"), received[:300]


def _serve(port, log_path):
    env = {**os.environ, "DATABASE_URL": workers.test_database_url(), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, str(workers.ROOT / "manage.py"), "serve", f"127.0.0.1:{port}"],
        cwd=workers.ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _children(pid):
    """The pids whose parent is `pid`, read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_taken_port_is_one_line_and_exit_1_with_no_worker_started(live_db, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = _serve(port, tmp_path / "serve.log")
        out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and f"cannot serve on 127.0.0.1:{port}" in lines[0], err
    assert "Sherlock is at" not in out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal")
def test_a_killed_serve_leaves_no_worker_behind(live_db, tmp_path):
    port = free_port()
    process = _serve(port, tmp_path / "serve.log")

    def answers():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        assert workers.wait_for(answers, timeout=60)
        children = _children(process.pid)
        assert len(children) == 2
    finally:
        process.kill()  # no chance to stop its children itself
        process.communicate(timeout=30)
    assert workers.wait_for(lambda: not any(_alive(pid) for pid in children), timeout=30)
