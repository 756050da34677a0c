"""The server a team deploys, under load: gunicorn with the deployment's own settings
(deploy/gunicorn.conf.py, docs/deploy.md), 50 concurrent clients for a few seconds on the API
and the pages, and not one connection reset nor one 5xx.

The development server (`manage.py serve`) reset a connection under the same load; this is
the server the deployment guide runs, on whichever database the suite runs on. The figures
are counts, never times: the suite asserts no wall-clock bound.
"""

import os
import subprocess
import sys
import threading
import time
from collections import Counter

import httpx2 as httpx
import pytest

from tests.support import factories, workers
from tests.support.api_server import free_port
from tests.support.governance import api_key
from tests.support.workers import ROOT, wait_for

CLIENTS = 50
SECONDS = 6
PATHS = ["/api/v1/runs/", "/api/v1/agents/", "/api/v1/datasets/", "/accounts/login/"]


@pytest.fixture
def gunicorn(live_db, tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": workers.test_database_url(),
        "SHERLOCK_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "2",
        "SHERLOCK_ACCESS_LOG": str(tmp_path / "access.log"),
        "PYTHONUNBUFFERED": "1",
    }
    log = open(tmp_path / "gunicorn.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            str(ROOT / "deploy" / "gunicorn.conf.py"),
            "sherlock.wsgi",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def answers():
        try:
            return httpx.get(f"{url}/accounts/login/", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        assert wait_for(answers, timeout=60), (tmp_path / "gunicorn.log").read_text()
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_fifty_clients_get_no_reset_and_no_5xx(gunicorn, live_db):
    builder = factories.user("builder", role="Builder")
    agent = factories.agent()
    version = factories.agent_version(agent)
    frozen = factories.dataset_version(cases=[("c1", "hi", {})])
    from evaluations.models import Run

    for _ in range(5):
        Run.objects.create(agent_version=version, dataset_version=frozen, requested_by=builder)
    _, secret = api_key(builder)

    statuses, failures = Counter(), Counter()
    lock = threading.Lock()
    deadline = time.monotonic() + SECONDS

    def client(number):
        headers = {"Authorization": f"Token {secret}"}
        with httpx.Client(base_url=gunicorn, headers=headers, timeout=60) as http:
            turn = number
            while time.monotonic() < deadline:
                path = PATHS[turn % len(PATHS)]
                turn += 1
                try:
                    status = http.get(path).status_code
                except httpx.HTTPError as exc:
                    with lock:
                        failures[type(exc).__name__] += 1
                    continue
                with lock:
                    statuses[status // 100 * 100] += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    print(f"answers by class: {dict(statuses)}, failures: {dict(failures)}")
    assert failures == Counter(), failures  # connection resets, refused connections, timeouts
    assert statuses[500] == 0, statuses
    assert sum(statuses.values()) >= CLIENTS  # every client was answered at least once
    assert set(statuses) <= {200, 400}, statuses  # 4xx: the throttle may answer 429
