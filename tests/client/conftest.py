"""The client's tests: `sherlock_client` imported from `client/` (as `pip install ./client`
would install it), and the CLI run as a process the way a CI job runs it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client"
if str(CLIENT) not in sys.path:
    sys.path.insert(0, str(CLIENT))


def cli_env(url, key, **extra):
    """The environment of a `sherlock` process: the package on its path, the server and key,
    and no CI variables of the machine running the tests."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "CI_", "GITLAB_", "SHERLOCK_")) and k != "CI"
    }
    env.update(
        PYTHONPATH=os.pathsep.join([str(CLIENT), str(ROOT)]),
        PYTHONUNBUFFERED="1",
        SHERLOCK_URL=url,
        SHERLOCK_API_KEY=key,
        **extra,
    )
    return env


def sherlock(args, url, key, *, timeout=120, **popen):
    """`sherlock ARGS` run to its end: the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "sherlock_client", *args],
        cwd=ROOT,
        env=cli_env(url, key),
        capture_output=True,
        text=True,
        timeout=timeout,
        **popen,
    )


@pytest.fixture
def run_cli():
    return sherlock


from tests.client.live import live_sherlock  # noqa: E402, F401 - the live server's fixture
