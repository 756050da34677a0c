"""Where a run came from: the commit, branch, repository and CI job, stored on the run and shown
on its page, and the default version name (the task's entrypoint at the commit's short sha,
`-dirty` when the work tree has uncommitted changes: `my_agent.eval:task@1a2b3c4d5e6f`).

The commit is the one a person pushed: on a GitHub pull request the head of the pull request
(from the event's payload), never the test merge commit GitHub checks out (`GITHUB_SHA`); on a
GitLab merged-results pipeline the merge request's source commit.

CI systems say it in their environment (GitHub Actions' `GITHUB_*`, GitLab's `CI_*`, and the
generic `CI`); outside CI, `git` is asked. Nothing here fails a run: what cannot be known is left
out.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from typing import Any


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def git_dirty() -> bool:
    """Whether the work tree has changes to tracked files (untracked files do not count)."""
    return bool(_git("status", "--porcelain", "--untracked-files=no"))


def _pull_request_head(env: Mapping[str, str]) -> str | None:
    """The head commit of the pull request a GitHub `pull_request` event is about, read from the
    event's payload (`GITHUB_EVENT_PATH`); None for other events or an unreadable payload."""
    if not env.get("GITHUB_EVENT_NAME", "").startswith("pull_request"):
        return None
    try:
        with open(env.get("GITHUB_EVENT_PATH", ""), encoding="utf-8") as payload:
            head = json.load(payload)["pull_request"]["head"]["sha"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return head if isinstance(head, str) and head else None


def _github(env: Mapping[str, str]) -> dict[str, Any]:
    server = env.get("GITHUB_SERVER_URL", "https://github.com")
    repository = env.get("GITHUB_REPOSITORY")
    run_id = env.get("GITHUB_RUN_ID")
    pull = None
    ref = env.get("GITHUB_REF", "")
    if ref.startswith("refs/pull/"):
        pull = ref.split("/")[2]
    return {
        "ci_provider": "github",
        "git_commit": _pull_request_head(env) or env.get("GITHUB_SHA"),
        # On a pull request GITHUB_REF_NAME is "<n>/merge": the head branch is what a person
        # recognises.
        "git_branch": env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME"),
        "git_repository": f"{server}/{repository}" if repository else None,
        "ci_run_id": run_id,
        "ci_job_url": f"{server}/{repository}/actions/runs/{run_id}"
        if repository and run_id
        else None,
        "pull_request": pull,
    }


def _gitlab(env: Mapping[str, str]) -> dict[str, Any]:
    return {
        "ci_provider": "gitlab",
        # A merged-results pipeline runs on a merge commit; the merge request's head is this.
        "git_commit": env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA") or env.get("CI_COMMIT_SHA"),
        "git_branch": env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME")
        or env.get("CI_COMMIT_REF_NAME")
        or env.get("CI_COMMIT_BRANCH"),
        "git_repository": env.get("CI_PROJECT_URL"),
        "ci_run_id": env.get("CI_PIPELINE_ID"),
        "ci_job_url": env.get("CI_JOB_URL"),
        "pull_request": env.get("CI_MERGE_REQUEST_IID"),
    }


def _generic(env: Mapping[str, str]) -> dict[str, Any]:
    """Jenkins, Buildkite, CircleCI and others, by the names they share most."""
    return {
        "ci_provider": "ci" if env.get("CI") else None,
        "git_commit": env.get("GIT_COMMIT")
        or env.get("BUILDKITE_COMMIT")
        or env.get("CIRCLE_SHA1"),
        "git_branch": env.get("GIT_BRANCH")
        or env.get("BUILDKITE_BRANCH")
        or env.get("CIRCLE_BRANCH"),
        "git_repository": env.get("GIT_URL") or env.get("CIRCLE_REPOSITORY_URL"),
        "ci_run_id": env.get("BUILD_ID") or env.get("BUILDKITE_BUILD_ID"),
        "ci_job_url": env.get("BUILD_URL")
        or env.get("BUILDKITE_BUILD_URL")
        or env.get("CIRCLE_BUILD_URL"),
        "pull_request": None,
    }


def collect(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The run's `metadata`: from the CI's variables, the rest from `git`."""
    env = os.environ if env is None else env
    if env.get("GITHUB_ACTIONS") or env.get("GITHUB_SHA"):
        found = _github(env)
    elif env.get("GITLAB_CI") or env.get("CI_COMMIT_SHA"):
        found = _gitlab(env)
    else:
        found = _generic(env)
    if not found.get("git_commit"):
        found["git_commit"] = _git("rev-parse", "HEAD")
    if not found.get("git_branch"):
        found["git_branch"] = _git("rev-parse", "--abbrev-ref", "HEAD")
    if not found.get("git_repository"):
        found["git_repository"] = _git("config", "--get", "remote.origin.url")
    return {key: str(value) for key, value in found.items() if value}


def default_version_name(
    metadata: Mapping[str, str] | None = None, entrypoint: str | None = None
) -> str | None:
    """`<entrypoint>@<commit's first 12 characters>`, with `-dirty` when tracked files changed
    (the bare commit when the task has no entrypoint): two task functions at one commit are
    two versions, and every job of a pipeline names the same one. None outside a git
    repository with no CI commit."""
    commit = (metadata or {}).get("git_commit") or _git("rev-parse", "HEAD")
    if not commit:
        return None
    name = commit[:12] + ("-dirty" if git_dirty() else "")
    return f"{entrypoint}@{name}" if entrypoint else name
