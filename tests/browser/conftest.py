"""The browser tests' fixtures: a real `runserver` on the test database, Debian's chromium
driven by Playwright, and screenshots a person can look at.

Every browser test is skipped, saying why, where chromium or Playwright is not installed
(`.ci/run` installs chromium). Set SHERLOCK_SCREENSHOTS to a directory to keep a full-page
screenshot of each page a test names (`shot(page, name)`); without it they go to the test's
temporary directory.
"""

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connections

from tests.support.workers import ROOT, TEST_HOSTS, wait_for
from tests.support.workers import test_database_url as worker_database_url

CHROMIUM = "/usr/bin/chromium"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server_env():
    """Extra environment of the page server: a test module overrides this fixture to start the
    server with settings of its own (an OIDC provider, tests/browser/test_people_sso.py)."""
    return {}


@pytest.fixture
def provider(tmp_path):
    """A real OIDC provider on loopback in a second process (tests/support/oidc_provider.py); a
    test gives the page server its settings by overriding `server_env` with `provider.env()`."""
    pytest.importorskip("oidc_provider_mock", reason="oidc-provider-mock is not installed")
    from tests.support.oidc_provider import OIDCProvider

    running = OIDCProvider(tmp_path / "oidc.log")
    yield running
    running.stop()


@pytest.fixture
def server(live_db, tmp_path, server_env):
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": worker_database_url(),
        "PYTHONUNBUFFERED": "1",
        "SHERLOCK_FAST_HASHER": "1",  # the test users' passwords use the fast hasher
        # The loopback agents and webhook receivers the pages are tried with, as an operator
        # would list them (the default refuses loopback).
        "SHERLOCK_AGENT_HOSTS": TEST_HOSTS,
        "SHERLOCK_WEBHOOK_HOSTS": TEST_HOSTS,
        **server_env,
    }
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
    if not shutil.which(CHROMIUM):
        pytest.skip("Debian's chromium is not installed")
    playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
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


@pytest.fixture
def shot(tmp_path):
    """`shot(page, name)`: a full-page screenshot, kept in SHERLOCK_SCREENSHOTS when set."""
    directory = Path(os.environ.get("SHERLOCK_SCREENSHOTS") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    return lambda page, name: page.screenshot(path=str(directory / f"{name}.png"), full_page=True)
