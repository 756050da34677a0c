"""The judge's retry policy: which failures retry, how long to wait, and for how long at most.

The SDK's own retries are off (`sdk.py`); this policy runs instead, so that `Retry-After`
(and OpenAI's `retry-after-ms`) is honoured on 429 and 5xx, 5xx, 408, 409, timeouts, reset
connections and unreadable 200s back off exponentially with jitter, and every failed attempt
is handed to the client to be recorded as a `JudgeCall` row. A wait longer than
`max_retry_after` is not waited for: the ask fails at once and says why.

Failures are named by their cause, read from the SDK's public exception classes and, for a
connection that failed, from the exception's cause chain (the aiohttp transport reports every
failed connect as a timeout, so the class alone would call a refused connection "no answer
within 60 s"): a refused connection (retried, but never waiting more than
`REFUSED_MAX_WAIT` seconds between tries: a server restarting comes back soon, a dead one
does not, and the whole ask stays within a few seconds), a host name not found and a TLS
failure (not retried: asking again cannot help), a timeout, an HTTP status.
"""

from __future__ import annotations

import random
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TypeVar

import openai

from evaluations.judge.errors import (
    CONNECTION,
    CONNECTION_REFUSED,
    HTTP_ERROR,
    NAME_NOT_FOUND,
    RATE_LIMITED,
    SERVER_ERROR,
    TIMEOUT,
    TLS,
    Failure,
    clip,
)

# Not settings: the first wait's ceiling, and the longest Retry-After we honour. The retry count
# and the longest wait are settings (SHERLOCK_JUDGE_MAX_RETRIES, _MAX_BACKOFF), declared there.
DEFAULT_BASE_BACKOFF = 0.5
DEFAULT_MAX_RETRY_AFTER = 60.0
# The longest wait between two tries after a refused connection.
REFUSED_MAX_WAIT = 1.0

# What one attempt may raise for a judge failure (APITimeoutError is an APIConnectionError);
# ValueError is a 200 whose body is not a chat completion. Anything else is a bug and raises.
ATTEMPT_ERRORS = (openai.APIStatusError, openai.APIConnectionError, ValueError)
# Statuses worth asking again: rate limits, server errors, conflicts (and 408, below).
_RETRYABLE_STATUS = (openai.RateLimitError, openai.InternalServerError, openai.ConflictError)

T = TypeVar("T")


@dataclass
class AttemptFailure(Failure):
    """One failed attempt: whether to try again, the server's wait if it gave one, and what to
    store as the call's response (the status and error body)."""

    retryable: bool = True
    retry_after: float | None = None
    response: dict | None = None
    max_wait: float | None = None  # the cause's own ceiling on the wait before the next try


def failure_of(exc: Exception, timeout: float) -> AttemptFailure:
    """What an exception in `ATTEMPT_ERRORS` means for the ask."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if isinstance(exc, openai.RateLimitError):
            code = RATE_LIMITED
        elif isinstance(exc, openai.InternalServerError):
            code = SERVER_ERROR
        else:
            code = HTTP_ERROR
        message = exc.body.get("message") if isinstance(exc.body, dict) else None
        return AttemptFailure(
            f"HTTP {status}: {clip(message or exc.message)}",
            code,
            # 408 Request Timeout has no exception class of its own in the SDK.
            retryable=isinstance(exc, _RETRYABLE_STATUS) or status == 408,
            retry_after=retry_after(exc.response.headers),
            response={"status_code": status, "body": _jsonable(exc.body)},
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = connection_cause(exc)
        if cause is not None:
            return cause
        if isinstance(exc, openai.APITimeoutError):
            return AttemptFailure(f"no answer within {timeout:g} s", TIMEOUT)
        return AttemptFailure(f"connection failed: {clip(_root(exc))}", CONNECTION)
    return AttemptFailure(f"unreadable response: {clip(exc)}", SERVER_ERROR)


def _chain(exc: BaseException):
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _root(exc: BaseException) -> BaseException:
    *_, last = _chain(exc)
    return last


def connection_cause(exc: BaseException) -> AttemptFailure | None:
    """The failure a connection error's cause names (refused, name not found, TLS, reset), or
    None when its chain names none of them (a timeout)."""
    for link in _chain(exc):
        if isinstance(link, ConnectionRefusedError):
            return AttemptFailure(
                "connection refused", CONNECTION_REFUSED, max_wait=REFUSED_MAX_WAIT
            )
        if isinstance(link, socket.gaierror):
            return AttemptFailure(
                f"host name not found ({clip(link.strerror or link)})",
                NAME_NOT_FOUND,
                retryable=False,
            )
        if isinstance(link, ssl.SSLError | ssl.CertificateError):
            return AttemptFailure(f"TLS failed: {clip(link)}", TLS, retryable=False)
    for link in _chain(exc):
        if isinstance(link, ConnectionError):  # reset, aborted: worth another try
            return AttemptFailure(
                f"connection failed: {clip(link) or type(link).__name__}", CONNECTION
            )
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """How many times to try one request, how long each try may take, and how long to wait."""

    timeout: float
    max_retries: int
    max_backoff: float
    base_backoff: float = DEFAULT_BASE_BACKOFF
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER

    def backoff(self, retry: int) -> float:
        # Exponential with jitter, so threads that failed together do not retry together.
        ceiling = min(self.max_backoff, self.base_backoff * (2**retry))
        return ceiling * random.uniform(0.5, 1.0)

    @property
    def worst_case_seconds(self) -> float:
        """An upper bound on one ask's duration (two questions, every retry used)."""
        wait = max(self.max_backoff, self.max_retry_after)
        return 2 * (self.max_retries + 1) * (self.timeout + wait) + 1

    async def run(
        self,
        attempt: Callable[[], Awaitable[T]],
        failed: Callable[[AttemptFailure, float], None],
        sleep: Callable[[float], Awaitable[None]],
    ) -> tuple[T, float] | Failure:
        """`await attempt()` until it succeeds, a failure does not retry, or the retries run out.

        Returns the attempt's result and its latency in ms, or the last failure (its message
        saying how many attempts were made). `failed(failure, latency_ms)` is called for each
        failed attempt, before any wait: the client records it as a call. The waits are
        `await sleep(seconds)`: the client's transport blocks (`time.sleep`) or suspends
        (`asyncio.sleep`), so one policy serves the sync and the async ask.
        """
        failure = Failure("no attempt made", CONNECTION)
        attempts = 0
        for retry in range(self.max_retries + 1):
            attempts += 1
            started = time.perf_counter()
            try:
                result = await attempt()
                return result, (time.perf_counter() - started) * 1000
            except ATTEMPT_ERRORS as exc:
                failure = failure_of(exc, self.timeout)
            failed(failure, (time.perf_counter() - started) * 1000)
            if not failure.retryable or retry == self.max_retries:
                break
            delay = failure.retry_after if failure.retry_after is not None else self.backoff(retry)
            if failure.max_wait is not None:
                delay = min(delay, failure.max_wait)
            if delay > self.max_retry_after:
                failure.error += (
                    f" (Retry-After {delay:g} s is over the {self.max_retry_after:g} s limit)"
                )
                break
            await sleep(delay)
        if attempts > 1:
            failure.error = f"{failure.error} (after {attempts} attempts)"
        return failure


def retry_after(headers) -> float | None:
    """Seconds to wait from `retry-after-ms` (OpenAI's) or `Retry-After` (seconds or a date)."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _jsonable(body):
    if body is None or isinstance(body, (dict, list, str, int, float, bool)):
        return body
    return str(body)
