"""The CI recipes run: the GitHub composite action (`action.yml`) and the GitLab example
(`docs/ci/gitlab-ci.yml`) are read from the repository and their shell steps run as written, by
bash, against a live Sherlock. What a CI machine provides is provided here: `sherlock` on the
PATH (this checkout's client, instead of the recipes' `pip install` step, which
test_install.py exercises), the CI's variables, and `gh` and `./deploy.sh` as small scripts
that record how they were called."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agents.models import AgentVersion
from governance.actions.publish_version import PublishVersion
from tests.client.conftest import ROOT, cli_env

pytestmark = pytest.mark.slow
TASK = "tests.client.tasks_under_test:refunds"


@pytest.fixture
def ci_bin(tmp_path):
    """A directory for the PATH: `sherlock` (this checkout's client), `gh` (records its
    arguments and the comment's body)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sherlock = bin_dir / "sherlock"
    sherlock.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m sherlock_client "$@"\n')
    gh = bin_dir / "gh"
    gh.write_text(
        '#!/bin/sh\necho "$@" > "$GH_LOG"\n'
        'while [ $# -gt 0 ]; do [ "$1" = --body-file ] && cp "$2" "$GH_LOG.body"; shift; done\n'
    )
    for script in (sherlock, gh):
        script.chmod(0o755)
    return bin_dir


def bash(script, env, cwd):
    return subprocess.run(
        ["bash", "-c", script], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


def github_expressions(text, values):
    """`${{ name }}` as GitHub Actions would expand it, from `values`."""

    def expand(match):
        return str(values[match.group(1).strip()])

    return re.sub(r"\$\{\{([^}]*)\}\}", expand, text)


def test_the_github_action_runs_comments_and_fails_with_the_clis_code(
    live_sherlock, ci_bin, tmp_path
):
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    steps = {step["name"]: step for step in action["runs"]["steps"]}
    assert steps["Install the Sherlock client"]["run"].startswith("python -m pip install")
    work = tmp_path / "work"
    work.mkdir()
    outputs = tmp_path / "github_output"
    outputs.write_text("")
    env = cli_env(
        live_sherlock.url,
        live_sherlock.key,
        PATH=f"{ci_bin}{os.pathsep}{os.environ['PATH']}",
        GITHUB_OUTPUT=str(outputs),
        GH_LOG=str(tmp_path / "gh.log"),
        INPUT_VERSION="gh-1",
    )
    values = {
        "inputs.agent": "refund-bot",
        "inputs.dataset": "refunds",
        "inputs.task": TASK,
        "inputs.version": "gh-1",
        "inputs.repetitions": "2",
        "inputs.concurrency": "4",
        "inputs.timeout": "30",
        "github.event.pull_request.number": "17",
    }
    ran = bash(github_expressions(steps["Run the evaluation"]["run"], values), env, work)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert outputs.read_text().strip() == "exit-code=0"
    assert (work / "sherlock-junit.xml").exists() and (work / "sherlock.json").exists()
    assert AgentVersion.objects.filter(name="gh-1").exists()

    commented = bash(
        github_expressions(steps["Comment on the pull request"]["run"], values), env, work
    )
    assert commented.returncode == 0, commented.stderr
    assert (tmp_path / "gh.log").read_text().split()[:3] == ["pr", "comment", "17"]
    assert "Sherlock: PASSED" in (tmp_path / "gh.log.body").read_text()

    values["steps.run.outputs.exit-code"] = outputs.read_text().strip().split("=")[1]
    final = bash(github_expressions(steps["Fail unless the run passed"]["run"], values), env, work)
    assert final.returncode == 0

    # A failing run: the evaluation step itself succeeds (so the comment is posted), the last
    # step fails with the CLI's code.
    values["inputs.task"] = "tests.client.tasks_under_test:no_refund"
    values["inputs.version"] = "gh-2"
    env["INPUT_VERSION"] = "gh-2"
    outputs.write_text("")
    ran = bash(github_expressions(steps["Run the evaluation"]["run"], values), env, work)
    assert ran.returncode == 0 and outputs.read_text().strip() == "exit-code=1"
    values["steps.run.outputs.exit-code"] = "1"
    final = bash(github_expressions(steps["Fail unless the run passed"]["run"], values), env, work)
    assert final.returncode == 1


def gitlab_script(job, variables):
    """A job's `script` as the GitLab runner runs it: one shell, line after line; the
    `pip install` of the client is left to the PATH's `sherlock`."""
    lines = [line for line in job["script"] if not line.startswith("pip install")]
    exports = [f"export {name}='{value}'" for name, value in variables.items()]
    return "\n".join([*exports, "set -e", *lines])


def test_the_gitlab_recipe_evaluates_and_deploys_only_a_published_version(
    live_sherlock, ci_bin, publisher, tmp_path
):
    recipe = yaml.safe_load((ROOT / "docs/ci/gitlab-ci.yml").read_text())
    variables = {
        **recipe["variables"],
        "SHERLOCK_AGENT": "refund-bot",
        "SHERLOCK_DATASET": "refunds",
        "SHERLOCK_TASK": TASK,
        "CI_COMMIT_SHORT_SHA": "deadbeef",
        "GITLAB_CI": "true",
        "CI_COMMIT_SHA": "deadbeef0123",
        "CI_JOB_URL": "https://gitlab.example/j/9",
    }
    work = tmp_path / "work"
    work.mkdir()
    deploy = work / "deploy.sh"
    deploy.write_text(f"#!/bin/sh\ntouch {tmp_path / 'deployed'}\n")
    deploy.chmod(0o755)
    env = cli_env(
        live_sherlock.url, live_sherlock.key, PATH=f"{ci_bin}{os.pathsep}{os.environ['PATH']}"
    )

    evaluated = bash(gitlab_script(recipe["evaluate"], variables), env, work)
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    assert (work / "sherlock-junit.xml").exists() and (work / "sherlock.md").exists()
    version = AgentVersion.objects.get(name="deadbeef")

    # The deploy job: gate passes, but a passed gate is not a publication: verify stops it.
    held = bash(gitlab_script(recipe["deploy"], variables), env, work)
    assert held.returncode == 1, held.stdout + held.stderr
    assert "is not published" in held.stdout
    assert not (tmp_path / "deployed").exists()

    PublishVersion(acting_user=publisher, agent_version=version, reason="ship it").execute()
    shipped = bash(gitlab_script(recipe["deploy"], variables), env, work)
    assert shipped.returncode == 0, shipped.stdout + shipped.stderr
    assert Path(tmp_path / "deployed").exists()
