"""The CI recipes run as a runner runs them: the GitHub composite action (`action.yml`) and the
GitLab example (`docs/ci/gitlab-ci.yml`) are read from the repository and their shell steps run
as written, by bash, with the variables a runner sets for a pull (merge) request event,
against a live Sherlock. The client is installed by the recipes' own install steps (a virtual
environment, pip from this checkout, the dependencies' wheels fetched once, as
test_install.py does); `gh` and GitLab's notes API are loopback stand-ins that record how they
were called."""

import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agents.models import AgentVersion
from governance.actions.publish_version import PublishVersion
from governance.attestations.keys import private_pem, public_pem
from tests.client.conftest import CLIENT, ROOT, cli_env

pytestmark = pytest.mark.slow
TASK = "tests.client.tasks_under_test:refunds"
HEAD = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@pytest.fixture(scope="session")
def wheels(tmp_path_factory):
    """The client's dependencies as wheels, for `pip install` with no index."""
    found = tmp_path_factory.mktemp("wheels")
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(found)]
        + ["httpx2>=2.13,<3", "rich>=13,<16", "setuptools>=61", "wheel"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if fetched.returncode != 0:
        pytest.skip(f"no package index reachable to fetch the wheels: {fetched.stderr[-300:]}")
    return found


@pytest.fixture
def runner(tmp_path, wheels):
    """A runner's machine: a work directory, `gh` recording its calls (and answering the
    comment list from $GH_COMMENTS), pip held to the fetched wheels."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "args = sys.argv[1:]\n"
        "body = None\n"
        "for i, a in enumerate(args):\n"
        "    if a == '--body-file': body = open(args[i + 1]).read()\n"
        "    if a.startswith('body=@'): body = open(a[6:]).read()\n"
        "with open(os.environ['GH_LOG'], 'a') as log:\n"
        "    log.write(json.dumps({'args': args, 'body': body}) + '\\n')\n"
        "if args[:1] == ['api'] and '--method' not in args:\n"
        "    print(os.environ.get('GH_COMMENTS', ''))\n"
    )
    gh.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    return {
        "bin": bin_dir,
        "work": work,
        "temp": tmp_path / "runner-temp",
        "pip": {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)},
    }


def bash(script, env, cwd):
    return subprocess.run(
        ["bash", "-e", "-c", script], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


def expand(text, values):
    """`${{ name }}` as GitHub Actions expands it, from `values`."""
    return re.sub(r"\$\{\{([^}]*)\}\}", lambda m: str(values[m.group(1).strip()]), str(text))


def outputs_of(path):
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def github_step(step, values, env, cwd):
    """One step of the action: its `env:` expanded from the event's values (the only place an
    input may appear), its script run by bash as written."""
    assert "${{" not in step["run"], f"{step['name']}: an expression pasted into the shell"
    step_env = {**env, **{k: expand(v, values) for k, v in (step.get("env") or {}).items()}}
    return bash(step["run"], step_env, cwd)


def test_the_github_action_on_a_pull_request(live_sherlock, runner, tmp_path):
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    steps = {step["name"]: step for step in action["runs"]["steps"]}
    assert steps["Set up Python"]["uses"].startswith("actions/setup-python@")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 17, "head": {"sha": HEAD}}}))
    github_output, github_path, summary = (tmp_path / n for n in ("out", "path", "summary"))
    for file in (github_output, github_path, summary):
        file.write_text("")
    env = cli_env(
        live_sherlock.url,
        live_sherlock.key,
        PATH=f"{runner['bin']}{os.pathsep}{os.environ['PATH']}",
        RUNNER_TEMP=str(runner["temp"]),
        GITHUB_OUTPUT=str(github_output),
        GITHUB_PATH=str(github_path),
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_ACTIONS="true",
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_EVENT_PATH=str(event),
        GITHUB_SHA="ffffffffffff0000000000000000000000000000",
        GITHUB_REF="refs/pull/17/merge",
        GITHUB_REPOSITORY="team/refund-bot",
        GH_LOG=str(tmp_path / "gh.log"),
        **runner["pip"],
    )
    # The inputs: a task name that would run a command if pasted into the shell.
    values = {
        "inputs.agent": "refund-bot",
        "inputs.dataset": "refunds",
        "inputs.task": TASK,
        "inputs.version": "",
        "inputs.repetitions": "2",
        "inputs.concurrency": "4",
        "inputs.timeout": "30",
        "github.action_path": str(ROOT),
        "github.event.pull_request.number": "17",
        "github.event.pull_request.head.repo.full_name": "team/refund-bot",
        "github.repository": "team/refund-bot",
    }

    installed = github_step(steps["Install the Sherlock client"], values, env, runner["work"])
    assert installed.returncode == 0, installed.stdout + installed.stderr
    env["PATH"] = f"{github_path.read_text().strip()}{os.pathsep}{env['PATH']}"
    assert (Path(github_path.read_text().strip()) / "sherlock").exists()

    ran = github_step(steps["Run the evaluation"], values, env, runner["work"])
    assert ran.returncode == 0, ran.stdout + ran.stderr
    said = outputs_of(github_output)
    assert said["exit-code"] == "0"
    version = AgentVersion.objects.get()
    assert version.name == said["version"] == f"{TASK}@{HEAD[:12]}" or version.name.startswith(
        f"{TASK}@{HEAD[:12]}-dirty"
    )
    assert said["url"].startswith(live_sherlock.url) and "PASSED" in summary.read_text()

    # The first comment is made; the next push edits it (found by its marker).
    commented = github_step(steps["Comment on the pull request"], values, env, runner["work"])
    assert commented.returncode == 0, commented.stderr
    calls = [json.loads(line) for line in (tmp_path / "gh.log").read_text().splitlines()]
    assert calls[-1]["args"][:3] == ["pr", "comment", "17"]
    assert calls[-1]["body"].startswith("<!-- sherlock: refund-bot on refunds -->\n")
    env["GH_COMMENTS"] = "991"
    again = github_step(steps["Comment on the pull request"], values, env, runner["work"])
    assert again.returncode == 0, again.stderr
    calls = [json.loads(line) for line in (tmp_path / "gh.log").read_text().splitlines()]
    assert calls[-1]["args"][:5] == [
        "api",
        "--silent",
        "--method",
        "PATCH",
        "repos/team/refund-bot/issues/comments/991",
    ]
    assert "Sherlock: PASSED" in calls[-1]["body"]

    # A fork's pull request: no call to GitHub, a notice instead.
    values["github.event.pull_request.head.repo.full_name"] = "someone/refund-bot"
    before = len(calls)
    forked = github_step(steps["Comment on the pull request"], values, env, runner["work"])
    assert forked.returncode == 0 and "::notice::" in forked.stdout
    assert len((tmp_path / "gh.log").read_text().splitlines()) == before

    values["steps.run.outputs.exit-code"] = said["exit-code"]
    assert (
        github_step(steps["Fail unless the run passed"], values, env, runner["work"]).returncode
        == 0
    )

    # A failing run: the evaluation step succeeds (so the comment is kept), the last step
    # fails with the CLI's code. The input is never run as a command.
    values["inputs.task"] = "tests.client.tasks_under_test:no_refund"
    values["inputs.version"] = 'gh-2"; touch pwned; echo "'
    github_output.write_text("")
    ran = github_step(steps["Run the evaluation"], values, env, runner["work"])
    assert ran.returncode == 0 and outputs_of(github_output)["exit-code"] == "1"
    assert not (runner["work"] / "pwned").exists()
    assert AgentVersion.objects.filter(name='gh-2"; touch pwned; echo "').exists()
    values["steps.run.outputs.exit-code"] = "1"
    assert (
        github_step(steps["Fail unless the run passed"], values, env, runner["work"]).returncode
        == 1
    )


class NotesApi(BaseHTTPRequestHandler):
    """GitLab's merge request notes, as far as the recipe uses them."""

    notes: list = []
    calls: list = []

    def _answer(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.calls.append(("GET", self.path, self.headers.get("PRIVATE-TOKEN")))
        self._answer(self.notes)

    def _write(self, method):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.calls.append((method, self.path, body["body"]))
        if method == "POST":
            self.notes.append({"id": len(self.notes) + 7, "body": body["body"]})
        self._answer({"id": 7})

    def do_POST(self):
        self._write("POST")

    def do_PUT(self):
        self._write("PUT")

    def log_message(self, *args):
        pass


def gitlab_job(recipe, name, variables):
    """A job's `before_script` and `script` as the GitLab runner runs them: one shell, line
    after line, stopping at the first failing line."""
    job = recipe[name]
    base = recipe[job["extends"]] if "extends" in job else {}
    lines = [*base.get("before_script", []), *job.get("before_script", []), *job["script"]]
    exports = [f"export {key}='{value}'" for key, value in variables.items()]
    return "\n".join([*exports, *lines])


def test_the_gitlab_recipe_on_a_merge_request_and_the_default_branch(
    live_sherlock, runner, publisher, tmp_path, settings
):
    recipe = yaml.safe_load((ROOT / "docs/ci/gitlab-ci.yml").read_text())
    rules = {name: recipe[name]["rules"] for name in ("evaluate", "request", "deploy")}
    assert {"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'} in rules["evaluate"]
    assert rules["deploy"][0]["when"] == "manual"
    notes = ThreadingHTTPServer(("127.0.0.1", 0), NotesApi)
    NotesApi.notes, NotesApi.calls = [], []
    threading.Thread(target=notes.serve_forever, daemon=True).start()
    variables = {
        **recipe["variables"],
        "SHERLOCK_AGENT": "refund-bot",
        "SHERLOCK_DATASET": "refunds",
        "SHERLOCK_TASK": TASK,
        "SHERLOCK_CLIENT": str(CLIENT),
        "GITLAB_CI": "true",
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_IID": "5",
        "CI_COMMIT_SHA": HEAD,
        "CI_JOB_URL": "https://gitlab.example/j/9",
        "CI_API_V4_URL": f"http://127.0.0.1:{notes.server_port}/api/v4",
        "CI_PROJECT_ID": "42",
        "GITLAB_TOKEN": "glpat-test",
    }
    env = cli_env(live_sherlock.url, live_sherlock.key, **runner["pip"])
    work = runner["work"]
    try:
        evaluated = bash(gitlab_job(recipe, "evaluate", variables), env, work)
        assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
        assert "could not be written" not in evaluated.stdout
        again = bash(gitlab_job(recipe, "evaluate", variables), env, work)
        assert again.returncode == 0, again.stdout + again.stderr
    finally:
        notes.shutdown()
    writes = [call for call in NotesApi.calls if call[0] != "GET"]
    assert [(m, p) for m, p, _ in writes] == [
        ("POST", "/api/v4/projects/42/merge_requests/5/notes"),
        ("PUT", "/api/v4/projects/42/merge_requests/5/notes/7"),
    ]
    assert writes[0][2].startswith("<!-- sherlock: refund-bot on refunds -->\n### ✅ Sherlock")
    assert all(token == "glpat-test" for m, _, token in NotesApi.calls if m == "GET")
    assert (work / "sherlock-junit.xml").exists() and (work / "sherlock.md").exists()
    version = AgentVersion.objects.get()
    assert version.name.startswith(f"{TASK}@{HEAD[:12]}")

    # The default branch: the request job asks for publication (the gate passes: exit 0); the
    # manual deploy job started before a Publisher acted fails at verify, and deploys once the
    # version is published.
    branch = {**variables, "CI_PIPELINE_SOURCE": "push", "CI_MERGE_REQUEST_IID": ""}
    deploy = work / "deploy.sh"
    deploy.write_text(f"#!/bin/sh\ntouch {tmp_path / 'deployed'}\n")
    deploy.chmod(0o755)
    requested = bash(gitlab_job(recipe, "request", branch), env, work)
    assert requested.returncode == 0, requested.stdout + requested.stderr
    held = bash(gitlab_job(recipe, "deploy", branch), env, work)
    assert held.returncode == 1, held.stdout + held.stderr
    assert "is not published" in held.stdout and not (tmp_path / "deployed").exists()
    # The publication is signed (docs/attestations.md), and the project pins the public key: the
    # deploy job also checks the release's attestation with it, offline.
    key = Ed25519PrivateKey.generate()
    private = tmp_path / "attestation-key.pem"
    private.write_bytes(private_pem(key))
    private.chmod(0o600)
    settings.SHERLOCK_ATTESTATIONS, settings.SHERLOCK_ATTESTATION_KEY = True, ""
    settings.SHERLOCK_ATTESTATION_KEY_FILE = private
    PublishVersion(acting_user=publisher, agent_version=version, reason="ship it").execute()
    stranger = tmp_path / "stranger.pem"
    stranger.write_text(public_pem(Ed25519PrivateKey.generate().public_key()))
    refused = bash(gitlab_job(recipe, "deploy", {**branch, "SHERLOCK_PUBLIC_KEY": str(stranger)}),
                   env, work)  # fmt: skip
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "not by this public key" in refused.stdout and not (tmp_path / "deployed").exists()
    pinned = tmp_path / "sherlock.pem"
    pinned.write_text(public_pem(key.public_key()))
    shipped = bash(gitlab_job(recipe, "deploy", {**branch, "SHERLOCK_PUBLIC_KEY": str(pinned)}),
                   env, work)  # fmt: skip
    assert shipped.returncode == 0, shipped.stdout + shipped.stderr
    assert "signature good" in shipped.stdout and (work / "release.intoto.json").exists()
    assert (tmp_path / "deployed").exists()
