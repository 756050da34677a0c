"""Start and stop real `qcluster` worker processes against the test database."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


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


def start_cluster(log_path, **env):
    environment = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "SHERLOCK_WORKERS": "2",
        "PYTHONUNBUFFERED": "1",
        **env,
    }
    environment.pop("SHERLOCK_Q_SYNC", None)
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


def wait_for(predicate, timeout=90, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False
