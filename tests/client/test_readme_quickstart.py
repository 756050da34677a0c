"""The README's first run, as a new user types it after `make run`: the demo seeded, an API key
from `manage.py create_api_token builder`, the task file the README writes and its `sherlock
run` line, against the project's own server and a worker. It must pass (exit 0); and the same
task without its cost is told, in the client's words, what to return."""

import io
import re
import subprocess
import sys

import pytest
from django.core.management import call_command

from tests.client.conftest import ROOT, cli_env
from tests.client.live import serving
from tests.support.workers import test_database_url as database_url

pytestmark = [pytest.mark.slow]


def readme_quickstart():
    """(the task file's text, the `sherlock run` arguments) of the README's first block."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Your agent, from your repository", 1)[1].split("```sh", 1)[1]
    block = block.split("\n```", 1)[0]
    task = re.search(r"cat > my_task\.py <<'EOF'\n(.*?)\nEOF\n", block, re.S).group(1)
    line = next(ln for ln in block.splitlines() if ln.startswith("sherlock run "))
    return task + "\n", line.split()[1:]


def api_key():
    """The README's `python manage.py create_api_token builder`, on the test database."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "create_api_token", "builder"],
        cwd=ROOT,
        env={**cli_env("", ""), "DATABASE_URL": database_url()},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def run_in(repo, task, args, url, key):
    """`sherlock run ARGS` in a team's git repository holding `my_task.py`."""
    repo.mkdir()
    (repo / "my_task.py").write_text(task)
    git = ["git", "-c", "user.email=team@example.com", "-c", "user.name=team"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "first"], cwd=repo, check=True)
    return subprocess.run(
        [sys.executable, "-m", "sherlock_client", *args],
        cwd=repo,
        env=cli_env(url, key),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_readme_quick_start_passes_and_a_task_without_its_cost_is_told_what_to_return(
    live_db, tmp_path, settings
):
    settings.SHERLOCK_DEMO_LEDGER = str(tmp_path / "ledger.jsonl")  # not the demo's own
    call_command("seed_demo", stdout=io.StringIO())
    task, args = readme_quickstart()
    assert "cost_usd" in task and "support-faq" in args
    with serving(tmp_path) as url:
        key = api_key()
        done = run_in(tmp_path / "team", task, args, url, key)
        assert done.returncode == 0, done.stdout + done.stderr
        assert (tmp_path / "team" / "junit.xml").exists()

        bare = "def task(input, context):\n    return f'Thanks for asking. {input}'\n"
        done = run_in(tmp_path / "bare", bare, args, url, key)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Return `cost_usd` with your task's output" in done.stdout
    # Gates read as the server's sentences, never as Python reprs of their numbers.
    assert "gate coverage: fail: 5 trial(s) with missing cost" in done.stdout
    assert "{'" not in done.stdout and "None" not in done.stdout
