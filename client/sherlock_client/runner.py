"""Calling the team's function on every work item of a run, and sending what it returned.

- **A bounded pool**: at most `concurrency` calls at once; async functions on one asyncio loop,
  sync ones each in a daemon thread of their own.
- **A per-case timeout**: a call not done within `timeout` seconds is a `timeout` error item.
  An async call is cancelled; a sync one cannot be (Python kills no thread), so it is
  abandoned and its slot given to the next case: a hung function costs its timeout, not the
  run's concurrency. An async function that blocks the loop itself cannot be timed out.
- **Every item checked where it is made** (`checked`): an output the server would refuse (a
  lone surrogate, a NUL, a transcript over the item limit) is sent alone as an `invalid` error
  item with the reason; every other item goes on.
- **Uploads in batches**, from one thread while the calls go on, every `flush_seconds` or at
  `batch` items or near the server's body limit (idempotent, keyed by case version and
  repetition), so a job killed halfway loses only its last moment. A batch refused for one
  item (400 naming `items[i]`) goes again with that item `invalid`, one too large (413) in
  halves; any other failed upload stops the calls (exit 3; `--resume` does the rest).

The work list is read whole before the first call: the server's list shrinks as uploads land,
so reading its pages meanwhile would skip items. docs/client.md, "Limits".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from sherlock_client import tasks
from sherlock_client.api import UPLOAD_MAX_ITEMS, Client
from sherlock_client.http import ApiError

ITEM_INDEX = re.compile(r"^items\[(\d+)\]")
MESSAGE_MAX = 2000


@dataclass(frozen=True)
class Limits:
    """What one upload may hold, as the server says when a run starts (`limits`); these
    defaults are the server's own defaults, for a server that does not say."""

    body_bytes: int = 10 * 1024 * 1024
    item_bytes: int = 1024 * 1024
    items: int = UPLOAD_MAX_ITEMS

    @classmethod
    def of(cls, run: dict[str, Any]) -> Limits:
        limits = run.get("limits")
        given = limits if isinstance(limits, dict) else {}
        values = {}
        for name in ("body_bytes", "item_bytes", "items"):
            value = given.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                values[name] = value
        return cls(**values)

    @property
    def batch_bytes(self) -> int:
        """A batch's items stop here: room for the envelope under the body limit."""
        return max(1024, int(self.body_bytes * 0.9) - 1024)


def encoded_size(value: Any) -> int:
    """`value`'s compact JSON size with every non-ASCII character escaped, as the server
    measures an item (never less than the UTF-8 body the session sends)."""
    return len(json.dumps(value, separators=(",", ":"), allow_nan=False))


def checked(outcome: dict[str, Any], limits: Limits) -> tuple[dict[str, Any], int]:
    """(the item to send, its size): `outcome` itself, or an `invalid` error item saying why
    the server would refuse it: text that is not valid Unicode (a lone surrogate), a NUL, a
    transcript over the item limit. Never raises."""
    key = outcome["key"]
    try:
        text = json.dumps(outcome, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end] if isinstance(exc.object, str) else ""
        shown = bad.encode("utf-8", "backslashreplace").decode("ascii")
        item = error_item(
            key,
            "invalid",
            f"the task's answer is not valid Unicode: a lone surrogate ({shown}, half of a "
            "pair such as an emoji) at character " + str(exc.start),
        )
        return item, encoded_size(item)
    except (TypeError, ValueError) as exc:
        item = error_item(key, "invalid", f"the task's answer is not JSON: {exc}")
        return item, encoded_size(item)
    if _has_nul(outcome):
        item = error_item(
            key, "invalid", "the task's answer holds a NUL character, which Sherlock refuses"
        )
        return item, encoded_size(item)
    transcript = outcome.get("transcript")
    if transcript is not None:
        size = encoded_size(transcript)
        if size > limits.item_bytes:
            item = error_item(
                key,
                "invalid",
                f"the task's answer is {size:,} bytes of JSON, over the server's limit of "
                f"{limits.item_bytes:,} per transcript (SHERLOCK_UPLOAD_ITEM_MAX_BYTES)",
            )
            return item, encoded_size(item)
    return outcome, encoded_size(outcome)


@dataclass
class Stats:
    """What one execution did: calls by outcome, what the server counted, upload time."""

    called: int = 0
    ok: int = 0
    raised: int = 0
    timeout: int = 0
    invalid: int = 0
    accepted: int = 0
    duplicates: int = 0
    remaining: int | None = None
    batches: int = 0
    upload_seconds: float = 0.0
    wall_seconds: float = 0.0
    errors: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "called": self.called,
            "ok": self.ok,
            "raised": self.raised,
            "timeout": self.timeout,
            "invalid": self.invalid,
            "accepted": self.accepted,
            "duplicates": self.duplicates,
            "remaining": self.remaining,
            "batches": self.batches,
            "upload_seconds": round(self.upload_seconds, 3),
            "wall_seconds": round(self.wall_seconds, 3),
        }


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def error_item(key: str, kind: str, message: str) -> dict[str, Any]:
    """An error item; its message made safe to send (a NUL or a lone surrogate in an
    exception's text is written as its escape)."""
    text = message[:MESSAGE_MAX].replace("\x00", "\\x00")
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return {"key": key, "error": {"kind": kind, "message": text}}


class Uploader(threading.Thread):
    """Sends finished items in batches while the calls go on (see the module's docstring)."""

    def __init__(
        self,
        api: Client,
        run_id: int,
        stats: Stats,
        *,
        batch: int = 200,
        flush_seconds: float = 0.5,
        limits: Limits | None = None,
    ) -> None:
        super().__init__(name="sherlock-uploader", daemon=True)
        self.api = api
        self.run_id = run_id
        self.stats = stats
        self.limits = limits or Limits()
        self.batch = min(batch, self.limits.items)
        self.flush_seconds = flush_seconds
        self.items: queue.Queue[tuple[dict[str, Any], int] | None] = queue.Queue()
        self.failure: ApiError | None = None

    def put(self, item: dict[str, Any]) -> None:
        """Queue `item` to send, as `checked` makes it (an `invalid` item in its place when
        the server would refuse it)."""
        sent, size = checked(item, self.limits)
        if sent is not item:
            self.stats.invalid += 1
            self.stats.ok -= "transcript" in item
        self.items.put((sent, size))

    def close(self) -> None:
        """Send what is left, then stop; raises the upload's failure if there was one."""
        self.items.put(None)
        self.join()
        if self.failure is not None:
            raise self.failure

    def run(self) -> None:
        done = False
        held: tuple[dict[str, Any], int] | None = None  # the item that did not fit the last batch
        while not done or held is not None:
            pending: list[dict[str, Any]] = []
            size = 0
            if held is not None:
                pending, size, held = [held[0]], held[1] + 1, None
            deadline = time.monotonic() + self.flush_seconds
            while not done and len(pending) < self.batch:
                try:
                    entry = self.items.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if entry is None:
                    done = True
                    break
                if pending and size + entry[1] + 1 > self.limits.batch_bytes:
                    held = entry  # the next batch's first item
                    break
                pending.append(entry[0])
                size += entry[1] + 1
            self._send_or_keep(pending)

    def _send_or_keep(self, pending: list[dict[str, Any]]) -> None:
        if not pending or self.failure is not None:
            return
        try:
            self.send(pending)
        except ApiError as exc:
            # Kept to raise in the main thread; later items are not sent (the run is
            # resumable: what was not stored is still in its work list).
            self.failure = exc
        except Exception as exc:
            self.failure = ApiError(
                f"the upload stopped: {type(exc).__name__}: {exc}", code="client_error"
            )

    def send(self, items: list[dict[str, Any]]) -> None:
        started = time.monotonic()
        for _ in range(len(items) + 1):
            try:
                answer = self.api.upload(self.run_id, items)
            except ApiError as exc:
                if exc.status == 413:
                    self._split(items, exc)
                    return
                index = _refused_index(exc, len(items))
                if index is None:
                    raise
                refused = items[index]
                items = list(items)
                items[index] = error_item(
                    refused["key"], "invalid", f"refused by the server: {exc.detail}"
                )
                self.stats.invalid += 1
                self.stats.ok -= "transcript" in refused
                continue
            self.stats.batches += 1
            self.stats.accepted += answer.get("accepted", 0)
            self.stats.duplicates += answer.get("duplicates", 0)
            self.stats.remaining = answer.get("remaining")
            break
        self.stats.upload_seconds += time.monotonic() - started

    def _split(self, items: list[dict[str, Any]], exc: ApiError) -> None:
        """A batch the server found too large (413, a server whose limit is lower than it
        said): its halves sent apart; one item too large alone is sent as `invalid`."""
        if len(items) > 1:
            half = len(items) // 2
            self.send(items[:half])
            self.send(items[half:])
            return
        (refused,) = items
        self.stats.invalid += 1
        self.stats.ok -= "transcript" in refused
        self.send([error_item(refused["key"], "invalid", f"refused by the server: {exc.detail}")])


def _refused_index(exc: ApiError, size: int) -> int | None:
    if exc.status != 400:
        return None
    for name in [exc.field, *(e.get("field") for e in exc.errors)]:
        match = ITEM_INDEX.match(name or "")
        if match and int(match.group(1)) < size:
            return int(match.group(1))
    return None


class Progress:
    """A progress bar on a terminal (rich, on stderr), a plain line every tenth otherwise."""

    def __init__(self, total: int, *, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.bar: Any = None
        self.next_line = 0
        if self.enabled and self.stream.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as Bar

            self.bar = Bar(
                TextColumn("cases"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            self.task = self.bar.add_task("cases", total=total)
            self.bar.start()

    def advance(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.advance(self.task)
        elif self.done >= self.next_line or self.done == self.total:
            print(f"sherlock: {self.done}/{self.total} done", file=self.stream, flush=True)
            self.next_line = self.done + max(1, self.total // 10)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


async def _call_sync(
    fn: Callable[..., Any], args: tuple[Any, ...], timeout: float
) -> tuple[bool, Any]:
    """`fn(*args)` in a daemon thread of its own, awaited at most `timeout` seconds:
    `(True, value)` or `(False, exception)`; TimeoutError only when the time ran out."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(outcome: tuple[bool, Any]) -> None:
        if not future.done():
            future.set_result(outcome)

    def target() -> None:
        try:
            outcome: tuple[bool, Any] = (True, fn(*args))
        except BaseException as exc:  # the team's code may raise anything
            outcome = (False, exc)
        # The loop may be gone by the time a hung call returns: nothing waits for it then.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=target, name="sherlock-task", daemon=True).start()
    return await asyncio.wait_for(future, timeout)


async def _call_async(
    fn: Callable[..., Any], args: tuple[Any, ...], timeout: float
) -> tuple[bool, Any]:
    async def guarded() -> tuple[bool, Any]:
        try:
            return True, await fn(*args)
        except Exception as exc:  # the team's exception, told apart from our timeout
            return False, exc

    return await asyncio.wait_for(guarded(), timeout)


async def _one(
    fn: Callable[..., Any], item: dict[str, Any], timeout: float, asynchronous: bool
) -> dict[str, Any]:
    key = item["key"]
    started = time.perf_counter()
    try:
        args = tasks.arguments(fn, item)
        call = _call_async if asynchronous else _call_sync
        ok, value = await call(fn, args, timeout)
    except TimeoutError:
        return error_item(key, "timeout", f"no answer within {timeout:g} s")
    if not ok:
        return error_item(key, "raised", f"{type(value).__name__}: {value}")
    latency_ms = (time.perf_counter() - started) * 1000
    try:
        return {"key": key, "transcript": tasks.transcript(value, latency_ms)}
    except tasks.InvalidReturn as exc:
        return error_item(key, "invalid", str(exc))


async def _execute(
    fn: Callable[..., Any],
    work: list[dict[str, Any]],
    *,
    concurrency: int,
    timeout: float,
    uploader: Uploader,
    stats: Stats,
    progress: Progress,
) -> None:
    asynchronous = tasks.is_async(fn)
    slots = asyncio.Semaphore(concurrency)

    async def one(item: dict[str, Any]) -> None:
        async with slots:
            if uploader.failure is not None:
                return  # the server refused an upload: stop calling
            outcome = await _one(fn, item, timeout, asynchronous)
        stats.called += 1
        if "transcript" in outcome:
            stats.ok += 1
        else:
            kind = outcome["error"]["kind"]
            setattr(stats, kind, getattr(stats, kind) + 1)
            if len(stats.errors) < 20:
                stats.errors.append(outcome)
        uploader.put(outcome)
        progress.advance()

    await asyncio.gather(*(one(item) for item in work))


def execute(
    api: Client,
    run_id: int,
    fn: Callable[..., Any],
    work: list[dict[str, Any]],
    *,
    concurrency: int = 8,
    timeout: float = 60.0,
    progress: bool = True,
    batch: int = 200,
    flush_seconds: float = 0.5,
    limits: Limits | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Stats:
    """Call `fn` on every item of `work` and upload every outcome; the Stats. Raises the
    ApiError of an upload the server refused. `loop`: a running event loop (of another thread,
    `aevaluate`'s caller's) to make the calls on, instead of a loop of this call's own."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    stats = Stats()
    started = time.monotonic()
    uploader = Uploader(api, run_id, stats, batch=batch, flush_seconds=flush_seconds, limits=limits)
    uploader.start()
    bar = Progress(len(work), enabled=progress)
    calls = _execute(
        fn,
        work,
        concurrency=concurrency,
        timeout=timeout,
        uploader=uploader,
        stats=stats,
        progress=bar,
    )
    try:
        if loop is None:
            asyncio.run(calls)
        else:
            asyncio.run_coroutine_threadsafe(calls, loop).result()
    except KeyboardInterrupt:
        # The interrupted task holds this very exception: asyncio would print it again, with
        # its traceback, as "never retrieved" when the task is collected. The caller says it
        # in one line (the CLI: "interrupted; what was done is uploaded").
        logging.getLogger("asyncio").disabled = True
        raise
    finally:
        bar.close()
        # What was done is sent even when the calls were interrupted (Ctrl-C, SIGTERM).
        uploader.close()
        stats.wall_seconds = time.monotonic() - started
    return stats
