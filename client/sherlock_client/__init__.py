"""Sherlock's client: run a team's own agent code on a dataset held by a Sherlock server, send
the transcripts to be scored by Sherlock's checks, and gate a deploy on the verdict.

    from sherlock_client import evaluate
    result = evaluate(my_task, agent="support-bot", dataset="support-basics", repetitions=3)
    result.exit_code, result.outcome, result.url
    result = await aevaluate(my_async_task, agent=..., dataset=...)  # notebooks, async code

The `sherlock` command does the same from a shell or CI (`sherlock_client.cli`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sherlock_client import tasks
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
    "aevaluate",
    "evaluate",
]


def _settings(url: str | None, api_key: str | None) -> tuple[str, str]:
    url = url or os.environ.get("SHERLOCK_URL")
    api_key = api_key or os.environ.get("SHERLOCK_API_KEY")
    if not url or not api_key:
        raise ConfigError("name the server and key: url=/api_key= or SHERLOCK_URL/SHERLOCK_API_KEY")
    return url, api_key


def _evaluate(
    task: Any,
    *,
    url: str,
    api_key: str,
    agent: str | None,
    dataset: str | None,
    version: str | None,
    resume: int | None,
    metadata: dict[str, Any] | None,
    **options: Any,
) -> Result:
    from sherlock_client import flow

    with Client(url, api_key) as api:
        return flow.run(
            api,
            agent=agent,
            dataset=dataset,
            task=task,
            version=version,
            resume=resume,
            options=RunOptions(**options),
            metadata=metadata,
        )


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


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
    metadata: dict[str, Any] | None = None,
) -> Result:
    """`sherlock run` as a call: `task` (a function, or "package.module:function") on every
    case and repetition of `dataset`'s latest frozen version, scored by the server; the
    Result (its `exit_code` is the CLI's). `url` and `api_key` default to `SHERLOCK_URL` and
    `SHERLOCK_API_KEY`. Raises ApiError (or Unreachable) and ConfigError where the CLI exits 3.

    Inside a running event loop (a notebook's cell, async code) a sync task runs all the same,
    on a thread of its own (the call blocks until the verdict); an async task is refused
    before anything is made: `await aevaluate(...)` runs it on the caller's loop.
    """
    url, api_key = _settings(url, api_key)
    arguments: dict[str, Any] = dict(
        url=url,
        api_key=api_key,
        agent=agent,
        dataset=dataset,
        version=version,
        resume=resume,
        metadata=metadata,
        repetitions=repetitions,
        concurrency=concurrency,
        timeout=timeout,
        policy=policy,
        wait=wait,
        progress=progress,
    )
    if _running_loop() is None:
        return _evaluate(task, **arguments)
    from sherlock_client import flow

    fn, _ = flow.load_task(task)
    if tasks.is_async(fn):
        raise ConfigError(
            "evaluate() was called inside a running event loop (a notebook, async code) with "
            "an async task: use `await aevaluate(...)`, which runs it on that loop"
        )
    pool = ThreadPoolExecutor(1, thread_name_prefix="sherlock-evaluate")
    try:
        return pool.submit(_evaluate, task, **arguments).result()
    finally:
        # An interrupted cell returns at once; the run's thread finishes on its own.
        pool.shutdown(wait=False)


async def aevaluate(
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
    metadata: dict[str, Any] | None = None,
) -> Result:
    """`evaluate` for async code and notebooks: `await aevaluate(task, agent=..., ...)`. An
    async task's calls are made on the caller's running loop (so clients it created there,
    an `AsyncOpenAI` say, work); the API calls and the wait for the verdict go on in a worker
    thread, so the loop stays free meanwhile. The same arguments and Result as `evaluate`."""
    url, api_key = _settings(url, api_key)
    loop = asyncio.get_running_loop()
    return await asyncio.to_thread(
        _evaluate,
        task,
        url=url,
        api_key=api_key,
        agent=agent,
        dataset=dataset,
        version=version,
        resume=resume,
        metadata=metadata,
        repetitions=repetitions,
        concurrency=concurrency,
        timeout=timeout,
        policy=policy,
        wait=wait,
        progress=progress,
        loop=loop,
    )
