"""Sherlock's client: run a team's own agent code on a dataset held by a Sherlock server, send
the transcripts to be scored by Sherlock's checks, and gate a deploy on the verdict.

    from sherlock_client import evaluate
    result = evaluate(my_task, agent="support-bot", dataset="support-basics", repetitions=3)
    result.exit_code, result.outcome, result.url

The `sherlock` command does the same from a shell or CI (`sherlock_client.cli`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from sherlock_client.api import Client
from sherlock_client.flow import ConfigError, GateResult, RunOptions
from sherlock_client.http import ApiError, Unreachable
from sherlock_client.result import Result

__all__ = [
    "ApiError",
    "Client",
    "ConfigError",
    "GateResult",
    "Result",
    "RunOptions",
    "Unreachable",
    "evaluate",
]


def evaluate(
    task: str | Callable[..., Any],
    *,
    agent: str | None = None,
    dataset: str | None = None,
    version: str | None = None,
    repetitions: int = 1,
    concurrency: int = 8,
    timeout: float = 60.0,
    resume: int | None = None,
    policy: int | None = None,
    wait: float = 1800.0,
    url: str | None = None,
    api_key: str | None = None,
    progress: bool = False,
    metadata: dict | None = None,
) -> Result:
    """`sherlock run` as a call: `task` (a function, or "package.module:function") on every
    case and repetition of `dataset`'s latest frozen version, scored by the server; the
    Result (its `exit_code` is the CLI's). `url` and `api_key` default to `SHERLOCK_URL` and
    `SHERLOCK_API_KEY`. Raises ApiError (or Unreachable) and ConfigError where the CLI exits 3.
    """
    from sherlock_client import flow

    url = url or os.environ.get("SHERLOCK_URL")
    api_key = api_key or os.environ.get("SHERLOCK_API_KEY")
    if not url or not api_key:
        raise ConfigError("name the server and key: url=/api_key= or SHERLOCK_URL/SHERLOCK_API_KEY")
    options = RunOptions(
        repetitions=repetitions,
        concurrency=concurrency,
        timeout=timeout,
        policy=policy,
        wait=wait,
        progress=progress,
    )
    with Client(url, api_key) as api:
        return flow.run(
            api,
            agent=agent,
            dataset=dataset,
            task=task,
            version=version,
            resume=resume,
            options=options,
            metadata=metadata,
        )
