"""The pages a person uses, in a real browser: Debian's chromium driven by Playwright.

A real `runserver` process serves the test database; the browser logs in, opens a run, watches
its progress update live (htmx polling, no reload) and sees the results grid when it finishes.
Skipped, with the reason, where chromium or Playwright is not installed (`.ci/run` installs
both).
"""

import os
import shutil
import socket
import subprocess
import sys

import pytest
from django.db import connections

from evaluations.engine import run_shard
from evaluations.models import Run, Trial
from tests.support import factories
from tests.support.workers import ROOT, wait_for
from tests.support.workers import test_database_url as worker_database_url

CHROMIUM = "/usr/bin/chromium"
playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not shutil.which(CHROMIUM), reason="Debian's chromium is not installed"),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(live_db, tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": worker_database_url(),
        "PYTHONUNBUFFERED": "1",
        "SHERLOCK_FAST_HASHER": "1",
    }  # the test users' passwords use the fast hasher
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
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

    def answers():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    assert wait_for(answers, timeout=30), (tmp_path / "server.log").read_text()
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=10)
    log.close()


@pytest.fixture
def browser(monkeypatch):
    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are
    # still synchronous and safe. They run in Playwright's context, where Django keeps a
    # connection of its own: closed here, or PostgreSQL could not drop the test database.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            yield browser
        finally:
            browser.close()
            connections.close_all()


def test_a_person_watches_a_run_finish_and_reads_its_grid(server, browser):
    factories.user("builder", role="Builder")
    version = factories.agent_version(callable_path="tests.support.agents_under_test.echo")
    dataset_version = factories.dataset_version(
        cases=[
            ("greeting", "hello", {"expected_tools": [{"name": "kb.search"}]}),
            ("farewell", "bye", {}),
        ],
        checks=[{"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}],
    )
    run = Run.objects.create(
        agent_version=version, dataset_version=dataset_version, status="running", trials_total=2
    )
    for cv in dataset_version.case_versions.all():
        Trial.objects.create(run=run, case=cv.case, case_version=cv, repetition=1)

    page = browser.new_page()
    page.goto(f"{server}/admin/login/?next=/runs/")
    page.fill("#id_username", "builder")
    page.fill("#id_password", factories.PASSWORD)
    page.click("input[type=submit]")
    page.click(f"a[href='/runs/{run.pk}/']")
    page.wait_for_selector("text=0/2")
    assert page.evaluate("typeof htmx") == "object"  # the vendored htmx loaded, no CDN

    # The run finishes behind the page's back: the page follows without a reload.
    run_shard(run.pk, list(run.trials.values_list("pk", flat=True)))
    page.wait_for_selector("table >> text=greeting", timeout=15000)
    grid = page.inner_text("main")
    assert "completed" in grid and "2/2" in grid
    assert "Tools" in grid and "passed" in grid


def test_a_person_reads_the_agents_warnings_on_the_trial_page(server, browser, tmp_path):
    factories.user("root", is_superuser=True)
    version = factories.agent_version()
    dataset_version = factories.dataset_version(cases=[("greeting", "hello", {})])
    run = Run.objects.create(agent_version=version, dataset_version=dataset_version)
    case_version = dataset_version.case_versions.get()
    warning = "answer 1 was cut off at the token limit (finish_reason length, max_tokens 5)"
    trial = Trial.objects.create(
        run=run,
        case=case_version.case,
        case_version=case_version,
        repetition=1,
        status="completed",
        transcript={
            "output": "Hello, how can I he",
            "finish_reason": "length",
            "warnings": [warning],
        },
    )

    page = browser.new_page()
    page.goto(f"{server}/admin/login/?next=/admin/evaluations/trial/{trial.pk}/change/")
    page.fill("#id_username", "root")
    page.fill("#id_password", factories.PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("text=Warnings")
    page.screenshot(path=str(tmp_path / "trial.png"), full_page=True)
    assert warning in page.inner_text(".field-transcript_warnings")
