"""A live Sherlock for the client's tests: the project's own web server (`manage.py
runserver`, threaded) and a real `qcluster` (which scores the uploaded transcripts) on the test
database, a Builder with an API key, an agent and a frozen dataset whose check the tests' task
functions pass or fail at will.

The dataset `refunds` has `CASES` cases, each expecting the tool `payments.refund` (a
`tools_used` check, blocking, threshold 1): a task returning `{"tool_calls": [{"name":
"payments.refund"}]}` passes a case, one returning `[]` fails it. No judge is needed. The
publishing policy in force (the agent's own) gates on that dataset, with no budget and coverage
required: an errored trial has no billed cost, and the runs whose errors the tests want to see
incomplete (exit 2) must be incomplete under it too, never failed (exit 1). The tasks report
their cost (`cost_usd`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.support import factories
from tests.support.workers import (
    ROOT,
    TEST_AGENT_CALLABLES,
    TEST_HOSTS,
    start_cluster,
    stop_cluster,
    test_database_url,
    wait_for,
)

CASES = 6
REFUND = {"name": "payments.refund"}
TOOLS_CHECK = {
    "label": "Refunds",
    "kind": "tools_used",
    "params": {"match": "any_order"},
    "threshold": 1.0,
}


@dataclass
class Live:
    url: str
    key: str
    builder: object
    agent: object
    dataset_version: object


def api_key(user):
    from governance.actions.create_api_key import CreateAPIKey

    _, secret = CreateAPIKey(
        acting_user=None, user=user, name="client tests", days=1, reason="the client's tests"
    ).execute()
    return secret


def refunds_dataset(cases=CASES):
    from agents.models import Tool

    Tool.objects.get_or_create(name="payments.refund", defaults={"effectful": False})
    return factories.dataset_version(
        factories.dataset("refunds"),
        cases=[
            (
                f"case-{i}",
                {"question": f"refund {i}"},
                {"expected_tools": [{"name": "payments.refund"}]},
            )
            for i in range(cases)
        ],
        checks=[TOOLS_CHECK],
    )


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def policy(agent, dataset_version, admin):
    from governance.models import PublishingPolicy

    found = PublishingPolicy.objects.create(
        name="Client tests",
        agent=agent,
        repetitions=1,
        min_case_pass_rate=1.0,
        max_cost_per_verified_outcome_usd=None,
        coverage_required=True,
        created_by=admin,
    )
    found.gate_datasets.add(dataset_version.dataset)
    return found


@contextlib.contextmanager
def serving(tmp_path):
    """The project's web server and a qcluster on the test database; yields the base URL."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "PYTHONUNBUFFERED": "1",
        "SHERLOCK_AGENT_CALLABLES": TEST_AGENT_CALLABLES,
        "SHERLOCK_AGENT_HOSTS": TEST_HOSTS,
        "SHERLOCK_WEBHOOK_HOSTS": TEST_HOSTS,
    }
    env.pop("SHERLOCK_JUDGE_BASE_URL", None)
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - closed below
    web = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "runserver",
            "--noreload",
            "--insecure",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    cluster = start_cluster(tmp_path / "cluster.log", SHERLOCK_WORKERS="1")

    def answers():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        assert wait_for(answers, timeout=60), (tmp_path / "server.log").read_text()
        yield f"http://127.0.0.1:{port}"
    finally:
        web.terminate()
        web.wait(timeout=10)
        log.close()
        stop_cluster(cluster)


@pytest.fixture
def live_sherlock(live_db, builder, admin_user, tmp_path):
    version = refunds_dataset()
    agent = factories.agent("refund-bot")
    policy(agent, version, admin_user)
    key = api_key(builder)
    with serving(tmp_path) as url:
        yield Live(url, key, builder, agent, version)
