"""The judge's answer cache: canonical keys, an in-process LRU, and single-flight asks.

A cache keyed by (model, prompt, params) saves cost on re-scoring. The key is
a sha256 over a canonical JSON of the judge's server (its base URL), the model, the messages, the
answer schema (with its bounds), temperature, seed and the agent repetition (see `cache_key`):
pointing Sherlock at another server, or another model on it, never reuses old answers. The
durable cache is the `JudgeCall` table (the newest successful call with the key); this module
keeps the hot entries in memory in front of it, and makes concurrent identical asks wait for
the first one instead of each paying for a call (the RAG checks share one claim extraction
between two checks this way, whether they ask on two threads or as two coroutines on a loop).
`AnswerCache.answer` is the order the client asks in: this process's cache, then the durable
one, then the model.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TypeVar

# Bump when the key's recipe changes, so old rows stop matching instead of matching wrongly.
# 2: the base URL joined the key, and answer schemas carry maxItems.
KEY_VERSION = 2

A = TypeVar("A")


def canonical_json(value) -> str:
    """The one serialization that hashes are taken over: sorted keys, no whitespace, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def cache_key(
    *,
    base_url: str,
    model: str,
    messages_json: str,
    schema_hash: str,
    temperature: float,
    seed: int | None,
    repetition: int,
) -> str:
    """The cache key of one question: who answers (`base_url` less a trailing slash, and
    `model`: the same name on another server is another judge), what is asked (the canonical
    messages, and the schema's hash computed once per rubric, so a key costs one small hash),
    and the agent `repetition` it scores, so that repetitions are judged independently while
    scoring the same repetition again is answered from the cache (docs/checks.md, "The judge").
    """
    # The messages are already canonical JSON; splicing them in avoids parsing them back.
    head = canonical_json(
        {
            "v": KEY_VERSION,
            "server": base_url.rstrip("/"),
            "model": model,
            "schema": schema_hash,
            "temperature": temperature,
            "seed": seed,
            "repetition": repetition,
        }
    )
    return sha256(f'{head[:-1]},"messages":{messages_json}}}')


@dataclass(frozen=True)
class CachedAnswer:
    """A successful answer that can serve a repeated question: the raw JSON text, and the
    id of the `JudgeCall` that paid for it (None when it is not stored)."""

    raw: str
    source_call_id: int | None = None


class AnswerCache:
    """A thread-safe LRU of successful answers plus a single-flight table of asks in progress.

    Only successful answers are kept: a failure is never served from the cache, so an identical
    question after a failure asks the model again. An ask in progress is a
    `concurrent.futures.Future` resolved when its asker is done: a thread waits on it, a
    coroutine awaits it wrapped (`asyncio.wrap_future`), so sync askers on many threads and
    async ones on event loops share one table.
    """

    def __init__(self, size: int = 4096):
        self.size = size
        self._entries: OrderedDict[str, CachedAnswer] = OrderedDict()
        self._inflight: dict[str, Future] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> CachedAnswer | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: str, entry: CachedAnswer) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def claim(self, key: str) -> tuple[CachedAnswer | None, Future | None, Future | None]:
        """Look the key up, and if it is missing become the one asker for it.

        Returns `(entry, None, None)` on a hit; `(None, lead, None)` when this caller must ask
        the model and then call `release(key, lead)`; `(None, None, other)` when another caller
        is asking this very question right now: wait for `other`, then look again.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                return entry, None, None
            other = self._inflight.get(key)
            if other is not None:
                return None, None, other
            lead = self._inflight[key] = Future()
            return None, lead, None

    def release(self, key: str, lead: Future) -> None:
        with self._lock:
            if self._inflight.get(key) is lead:
                del self._inflight[key]
        lead.set_result(None)

    async def answer(
        self,
        key: str,
        *,
        ask: Callable[[], Awaitable[tuple[A, CachedAnswer | None]]],
        serve: Callable[[CachedAnswer], Awaitable[A | None]],
        lookup: Callable[[str], Awaitable[CachedAnswer | None]] | None = None,
        wait: Callable[[Future], Awaitable[None]],
    ) -> A:
        """The answer to the question filed under `key`, from the first of: this cache, the
        durable cache (`lookup`, the `JudgeCall` table), the model (`ask`).

        `serve(entry)` makes an answer of a cached entry, or None when the entry is unusable
        (the model is asked instead: junk is never served). `ask()` returns the answer and the
        entry to file it under, None for a failure (never cached). Identical questions asked at
        the same time wait for the first asker (`claim`) through `wait(other)`, which blocks
        or suspends (the client's transport) and bounds the wait, in case the other asker
        died without releasing; if that asker failed, this one asks on its own.
        """
        entry, lead, other = self.claim(key)
        if other is not None:
            await wait(other)
            entry = self.get(key)
        if entry is not None:
            answer = await serve(entry)
            if answer is not None:
                return answer
        try:
            if lookup is not None:
                entry = await lookup(key)
                if entry is not None:
                    answer = await serve(entry)
                    if answer is not None:
                        self.put(key, entry)
                        return answer
            answer, entry = await ask()
            if entry is not None:
                # Filed before the waiting askers are released, so they find it.
                self.put(key, entry)
            return answer
        finally:
            if lead is not None:
                self.release(key, lead)
