"""The judge's I/O, blocking or on an event loop: what lets one flow serve `ask` and `aask`.

The flow of an ask (`client.py`: the cache, the retries, the repair, the recording) is written
once, as coroutines that do every piece of I/O through a transport:

- `send(core, request)`: one chat completion (the SDK's exceptions for a failure);
- `sleep(seconds)`: the wait before a retry;
- `wait(other)`: wait for another asker's identical question in flight (a
  `concurrent.futures.Future`, `cache.AnswerCache.claim`), at most the worst case of one ask;
- `lookup(core, key)`: the stored cache (the `JudgeCall` table, a statement);
- `record(core, calls, context)`: hand one ask's calls to the recorder.

`BLOCKING` blocks in each (the sync SDK client, `time.sleep`, a thread's wait, the recorder and
look-up called here) and so never suspends: `JudgeClient.ask` runs the flow to its end without
a loop (`sherlock.core.aio.run_unsuspended`). `ON_LOOP` awaits them on the running loop (the
loop's `AsyncOpenAI`, `asyncio.sleep`, the future wrapped for the loop); a look-up or recorder
that touches the database is awaited as the client's `alookup` / `arecorder` when it has them
(the engine's go through its few database threads), else through asgiref's `sync_to_async`,
Django's own way to the ORM from a loop (on one thread kept for it; under `async_to_sync`, on
the thread that waits: a test's, inside its transaction), since the ORM must not run on the loop.
"""

from __future__ import annotations

import asyncio
import time
from concurrent import futures

from asgiref.sync import sync_to_async

from evaluations.judge.sdk import achat_completion, async_openai_client, chat_completion


class Blocking:
    """The sync ask's I/O: every operation blocks this thread and none suspends."""

    async def send(self, core, request: dict) -> dict:
        return chat_completion(core.sdk, request, core.retry.timeout)

    async def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    async def wait(self, core, other: futures.Future) -> None:
        futures.wait([other], timeout=core.retry.worst_case_seconds)

    async def lookup(self, core, key: str):
        return core.cache_lookup(key)

    async def record(self, core, calls: list, context) -> None:
        core.recorder(calls, context)


class OnLoop:
    """The async ask's I/O, awaited on the running loop: hundreds of asks in flight, no thread
    each."""

    async def send(self, core, request: dict) -> dict:
        sdk = async_openai_client(core.base_url, core.api_key, core.retry.timeout)
        return await achat_completion(sdk, request, core.retry.timeout)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def wait(self, core, other: futures.Future) -> None:
        # `asyncio.wait` never cancels what it waits for: a waiter giving up (or cancelled)
        # leaves the other askers' future alone.
        await asyncio.wait([asyncio.wrap_future(other)], timeout=core.retry.worst_case_seconds)

    async def lookup(self, core, key: str):
        if core.alookup is not None:
            return await core.alookup(key)
        return await sync_to_async(core.cache_lookup)(key)

    async def record(self, core, calls: list, context) -> None:
        if core.arecorder is not None:
            await core.arecorder(calls, context)
        else:
            await sync_to_async(core.recorder)(calls, context)


BLOCKING = Blocking()
ON_LOOP = OnLoop()
