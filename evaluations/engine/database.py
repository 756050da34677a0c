"""The engine's database connections: a fixed few per worker process, whatever the calls in flight.

Calls in flight are cheap (a coroutine each, on the shard's loop); database connections are not
(PostgreSQL's `max_connections` is 100 by default). So every statement of an async
shard (claims, the help-with-pending query, the evidence step, the judge's stored-cache
lookups) runs on the shard's `Database`: `SHERLOCK_DB_CONNECTIONS` threads, each keeping its
own Django connection for the shard's life. With the shard's own thread and its writer that is
`SHERLOCK_DB_CONNECTIONS + 2` connections per worker process.

Code running on a shard's blocking pool reaches it through `call`, which runs the function on
the database threads when the engine set one for this context (`active`), else right here (the
tests' sync mode, and every caller outside the engine), so the same code serves both; code on
the loop itself (the judge's recorder and look-up, the evidence step) awaits `arun`.
"""

import asyncio
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

from django.db import DatabaseError, connection

from sherlock.core.aio import in_thread

# The Database an async shard uses, for code on its blocking pool (see `call`).
active = contextvars.ContextVar("engine_database", default=None)


class Database:
    """A few threads that each keep one database connection; the work handed to them."""

    def __init__(self, size):
        self.size = size
        self.pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="sherlock-db")

    async def run(self, function, /, *args):
        """`function(*args)` on a database thread, awaited from the shard's loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, _guarded, function, args)

    def call(self, function, /, *args):
        """`function(*args)` on a database thread, waited for (from a blocking-pool thread)."""
        return self.pool.submit(_guarded, function, args).result()

    def close(self):
        """Close every thread's connection, then the threads: a shard leaves no connection
        behind (a test database can be dropped, an idle worker holds none)."""
        barrier = threading.Barrier(self.size)

        def close_mine():
            connection.close()
            barrier.wait()  # holds this thread, so each of the `size` tasks lands on another

        for future in [self.pool.submit(close_mine) for _ in range(self.size)]:
            future.result()
        self.pool.shutdown(wait=True)


def _guarded(function, args):
    try:
        return function(*args)
    except DatabaseError:
        # A broken connection (the server restarted) is replaced on the next statement.
        connection.close_if_unusable_or_obsolete()
        raise


def call(function, /, *args):
    """`function(*args)` through the async shard's Database when there is one, else here."""
    db = active.get()
    if db is None:
        return function(*args)
    return db.call(function, *args)


async def arun(function, /, *args):
    """`call` awaited on the shard's loop: on its Database when the engine set one, else on
    the blocking pool (`sherlock.core.aio.in_thread`); never on the loop, where the ORM refuses
    to run."""
    db = active.get()
    if db is None:
        return await in_thread(function, *args)
    return await db.run(function, *args)
