"""The one way the client speaks HTTP to Sherlock: an httpx2 client with the API key, a timeout
per call, retries and pagination.

Retries are what CI jobs of other tools lacked (rate limits failing a whole evaluation): a 429
(waiting what `Retry-After` asks, capped), a 502, 503 or 504, and a connection that failed are
tried again with exponential backoff and full jitter, up to `retries` times. A call that may
have been carried out already is retried only when doing it twice is harmless: `idempotent`
(every GET, and the POSTs the API makes idempotent: ensure, uploads, finish) also retries a
timeout or a dropped answer; other POSTs (creating a run) retry only what certainly did not
reach the server: a refused connection, a 429 or a 503.

Every answer that is not a success becomes an `ApiError` carrying the API's `{detail, code,
field}` (docs/api.md); a server that cannot be reached is an `Unreachable` (code
`unreachable`). The CLI exits 3 on both.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2 as httpx

RETRY_STATUSES = {429, 502, 503, 504}
# What certainly was not carried out: a rate limit and "unavailable" are refusals.
REFUSED_STATUSES = {429, 503}


class ApiError(Exception):
    """A refused or failed API call: the HTTP `status` and the API's `detail`, `code` and
    `field` (None when the answer named none), `errors` when several fields failed."""

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        code: str | None = None,
        field: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        method: str = "",
        url: str = "",
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.code = code
        self.field = field
        self.errors = errors or []
        self.method = method
        self.url = url

    def __str__(self) -> str:
        where = f"{self.method} {self.url}: " if self.method else ""
        status = f"{self.status} " if self.status else ""
        code = f"[{self.code}] " if self.code else ""
        field = f" (field {self.field})" if self.field else ""
        return f"{where}{status}{code}{self.detail}{field}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
            "field": self.field,
        }


class Unreachable(ApiError):
    """The server could not be reached (refused, DNS, TLS, timeouts) after every retry."""


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_from(response: httpx.Response, method: str) -> ApiError:
    """The API's error shape read from a refusal; a body that is not that shape (a proxy's HTML
    page) is quoted short."""
    try:
        body = response.json()
    except ValueError:
        body = None
    url = str(response.request.url) if response.request else ""
    if isinstance(body, dict) and "detail" in body:
        return ApiError(
            str(body.get("detail")),
            status=response.status_code,
            code=body.get("code"),
            field=body.get("field"),
            errors=body.get("errors") if isinstance(body.get("errors"), list) else None,
            method=method,
            url=url,
        )
    text = response.text.strip().replace("\n", " ")
    return ApiError(
        text[:200] or response.reason_phrase,
        status=response.status_code,
        code="http_error",
        method=method,
        url=url,
    )


class Session:
    """An API session: base URL, key, per-call `timeout` (seconds), `retries` and the backoff
    (`backoff` doubled per attempt, full jitter, at most `max_backoff`). Thread-safe: the
    runner's uploader and the main thread share one (httpx2's pool is)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        retries: int = 6,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        base = base_url.rstrip("/")
        if not base.startswith(("http://", "https://")):
            # Said at once: a URL without a scheme is a configuration error, never retried.
            raise ApiError(
                f"the server's URL must start with http:// or https:// (got {base_url!r}): set "
                "SHERLOCK_URL or --url",
                code="config",
                field="url",
            )
        if not base.endswith("/api/v1"):
            base += "/api/v1"
        self.base_url = base + "/"
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.sleep = sleep
        self.retried = 0  # calls tried again, for the bench and the tests' figures
        self._lock = threading.Lock()
        self.http = httpx.Client(
            base_url=self.base_url,
            headers={
                "Authorization": f"Token {api_key}",
                "Accept": "application/json",
                "User-Agent": "sherlock-client/0.1",
            },
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=16),
            follow_redirects=False,
        )

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url(self, path: str) -> str:
        """An absolute URL for `path` (relative to /api/v1/, or absolute already)."""
        if path.startswith(("http://", "https://")):
            return path
        return self.base_url + path.lstrip("/")

    def _wait(self, attempt: int, asked: float | None) -> float:
        if asked is not None:
            return min(asked, self.max_backoff)
        return random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        idempotent: bool | None = None,
        text: bool = False,
    ) -> Any:
        """The decoded JSON answer of one call (None for an empty body; the body as text when
        `text`), retried as the module says; ApiError or Unreachable otherwise."""
        if idempotent is None:
            idempotent = method.upper() == "GET"
        url = self.url(path)
        attempt = 0
        while True:
            try:
                response = self.http.request(method, url, json=json, params=params)
            except httpx.TransportError as exc:
                # A refused connection never reached the server; a timeout or a dropped
                # answer may have been carried out.
                safe = idempotent or isinstance(exc, httpx.ConnectError)
                if safe and attempt < self.retries:
                    self._note_retry()
                    self.sleep(self._wait(attempt, None))
                    attempt += 1
                    continue
                raise Unreachable(
                    f"cannot reach {self.base_url}: {type(exc).__name__}: {exc}",
                    code="unreachable",
                    method=method,
                    url=url,
                ) from exc
            status = response.status_code
            retry = idempotent or status in REFUSED_STATUSES
            if status in RETRY_STATUSES and attempt < self.retries and retry:
                self._note_retry()
                self.sleep(self._wait(attempt, _retry_after(response)))
                attempt += 1
                continue
            if status >= 400:
                raise error_from(response, method)
            if text:
                return response.text
            if not response.content:
                return None
            try:
                return response.json()
            except ValueError as exc:
                raise ApiError(
                    "the server answered something that is not JSON (is the URL Sherlock's?)",
                    status=status,
                    code="not_json",
                    method=method,
                    url=url,
                ) from exc

    def _note_retry(self) -> None:
        with self._lock:
            self.retried += 1

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: Any = None, *, idempotent: bool = False) -> Any:
        body = {} if body is None else body
        return self.request("POST", path, json=body, idempotent=idempotent)

    def paginate(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of a list, following `next` (page numbers and cursors alike); an answer
        that is a bare list is that list."""
        page = self.get(path, **params)
        while True:
            if isinstance(page, list):
                yield from page
                return
            yield from page.get("results", [])
            following = page.get("next")
            if not following:
                return
            page = self.request("GET", following)
