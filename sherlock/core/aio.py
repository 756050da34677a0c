"""Running blocking code from an event loop, and async HTTP clients that live with their loop.

The run engine overlaps many trials on one asyncio loop per shard (evaluations.engine.shards).
Code that blocks (a Python-callable agent, a tool executor, a check) runs through `in_thread`
on the pool the engine set for the shard (`blocking_pool`), with the caller's context
variables, so a bounded number of threads serves it. Async HTTP clients (`openai.AsyncOpenAI`,
`httpx2.AsyncClient`) hold connections bound to the loop that opened them, so `loop_client`
keeps them per loop and key, and `aclose_loop_clients` closes a loop's clients before it ends.

A key's calls in flight are spread over clients of at most `POOL_SIZE` connections each: the
connection pool under every client (httpcore's) looks at each connection it holds on every
request and every response, to find a free one and drop expired ones, so one pool of 128
connections spent more of the engine's loop in that scan than in building the requests
(profiled at 256 calls in flight on two workers).

Code written once for both worlds (the judge's flow, the model checks' judging) is a coroutine
over its I/O: awaited on a loop it awaits async I/O; given blocking I/O that never suspends, the
same coroutine runs to its end without a loop through `run_unsuspended`.
"""

import asyncio
import contextvars
import functools
import itertools
import ssl
import threading
import weakref
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor
from typing import Any, TypeVar, cast

T = TypeVar("T")

# The executor `in_thread` runs on; None: the loop's default executor.
blocking_pool: contextvars.ContextVar[Executor | None] = contextvars.ContextVar(
    "blocking_pool", default=None
)


async def in_thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`function(*args, **kwargs)` on the shard's blocking pool, awaited; the caller's context
    variables go with it (like `asyncio.to_thread`, on a bounded pool of our choosing)."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
    return await loop.run_in_executor(blocking_pool.get(), call)


def run_unsuspended(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of `coroutine`, run to its end right here, without an event loop.

    For a coroutine whose every await completes at once (its I/O blocks instead of suspending:
    the judge's sync path, `evaluations.judge.client`). One that suspends awaited something
    asynchronous on a path meant to block, a bug: it is closed and RuntimeError raised.
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    coroutine.close()
    raise RuntimeError(f"{coroutine.__qualname__} suspended: it awaited async I/O without a loop")


POOL_SIZE = 16


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's default TLS context (httpx's own default, `SSL_CERT_FILE` honoured), for
    the loops' clients to share: each client building its own loads the system's certificates
    again, about 50 ms of CPU and 1 MB per client, and a shard's loop makes several."""
    # Imported here: httpx2 is loaded by the first event loop that needs a client, not by every
    # process.
    import httpx2

    return httpx2.create_ssl_context()


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, "_Spread"]] = (
    weakref.WeakKeyDictionary()
)
_clients_lock = threading.Lock()


class _Spread:
    """One key's clients on one loop, handed out in turn."""

    def __init__(self) -> None:
        self.clients: list[Any] = []
        self.turn = itertools.count()


def loop_client(key: Any, factory: Callable[[], Any], *, in_flight: int = 1) -> Any:
    """A client for `key` on the running loop, made by `factory()` when needed: with
    `in_flight` calls of the key expected at once, up to ``ceil(in_flight / POOL_SIZE)``
    clients, handed out in turn, so that no client's pool holds many more than `POOL_SIZE`
    connections. A client is safe to share between the loop's tasks; one call uses one."""
    loop = asyncio.get_running_loop()
    wanted = max(1, -(-in_flight // POOL_SIZE))
    with _clients_lock:
        spread = _clients.setdefault(loop, {}).setdefault(key, _Spread())
        turn = next(spread.turn) % wanted
        if turn >= len(spread.clients):
            spread.clients.append(factory())
            turn = len(spread.clients) - 1
        return spread.clients[turn]


async def aclose_loop_clients() -> None:
    """Close the running loop's clients (their connections die with the loop anyway)."""
    with _clients_lock:
        spreads = _clients.pop(asyncio.get_running_loop(), {})
    for spread in spreads.values():
        for client in spread.clients:
            await client.aclose() if hasattr(client, "aclose") else await client.close()
