"""Running blocking code from an event loop, and async HTTP clients that live with their loop.

The run engine overlaps many trials on one asyncio loop per shard (evaluations.engine.shards).
Code that blocks (a Python-callable agent, a tool executor, a check) runs through `in_thread`
on the pool the engine set for the shard (`blocking_pool`), with the caller's context
variables, so a bounded number of threads serves it. Async HTTP clients (`openai.AsyncOpenAI`,
`httpx2.AsyncClient`) hold connections bound to the loop that opened them, so `loop_client`
keeps one per loop and key, and `aclose_loop_clients` closes a loop's clients before it ends.

Code written once for both worlds (the judge's flow, the model checks' judging) is a coroutine
over its I/O: awaited on a loop it awaits async I/O; given blocking I/O that never suspends, the
same coroutine runs to its end without a loop through `run_unsuspended`.
"""

import asyncio
import contextvars
import functools
import threading
import weakref

# The executor `in_thread` runs on; None: the loop's default executor.
blocking_pool = contextvars.ContextVar("blocking_pool", default=None)


async def in_thread(function, /, *args, **kwargs):
    """`function(*args, **kwargs)` on the shard's blocking pool, awaited; the caller's context
    variables go with it (like `asyncio.to_thread`, on a bounded pool of our choosing)."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
    return await loop.run_in_executor(blocking_pool.get(), call)


def run_unsuspended(coroutine):
    """The result of `coroutine`, run to its end right here, without an event loop.

    For a coroutine whose every await completes at once (its I/O blocks instead of suspending:
    the judge's sync path, `evaluations.judge.client`). One that suspends awaited something
    asynchronous on a path meant to block, a bug: it is closed and RuntimeError raised.
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError(f"{coroutine.__qualname__} suspended: it awaited async I/O without a loop")


_clients = weakref.WeakKeyDictionary()  # loop -> {key: client}
_clients_lock = threading.Lock()


def loop_client(key, factory):
    """The client for `key` on the running loop, made by `factory()` the first time."""
    loop = asyncio.get_running_loop()
    with _clients_lock:
        clients = _clients.setdefault(loop, {})
        client = clients.get(key)
        if client is None:
            client = clients[key] = factory()
    return client


async def aclose_loop_clients():
    """Close the running loop's clients (their connections die with the loop anyway)."""
    with _clients_lock:
        clients = _clients.pop(asyncio.get_running_loop(), {})
    for client in clients.values():
        await client.aclose() if hasattr(client, "aclose") else await client.close()
