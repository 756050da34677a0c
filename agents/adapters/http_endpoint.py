"""`http`: the agent is a service; Sherlock POSTs each case to it and reads the transcript back.

Config `{"url": "https://...", "timeout": 30, "headers": {...}}`. The request body is
`{"id", "input", "repetition"}`: the case's id and input only, never its expected answer or
reference contexts (those are the answer key). The answer must be a JSON object in the
transcript format (docs/checks.md); a JSON string is taken as the output. Header values that are
credentials are named by environment variable (`{"env": "SUPPORT_BOT_TOKEN", "prefix": "Bearer
"}`) and read at call time, so a version's config never holds a secret; the variable must be
one SHERLOCK_AGENT_ENV lists and the URL's host one SHERLOCK_AGENT_HOSTS allows (names, for a
secret), on save and again when a run prepares the version (sherlock.core.egress).
"""

import contextlib
import json
import os
import threading
from typing import Any

import httpx2
from django.conf import settings

from agents.adapters.base import (
    HEADERS,
    AgentCallError,
    PreparedAgent,
    check_egress,
    resolve_headers,
    secrets_of,
    validate_headers,
)
from sherlock.core.aio import loop_client, tls_context

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["url"],
    "properties": {
        "url": {
            "type": "string",
            "pattern": "^https?://",
            "description": "Where each case is POSTed as JSON (http:// or https://; its host "
            "must be in SHERLOCK_AGENT_HOSTS).",
        },
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 3600,
            "description": "Seconds to wait for an answer (default 30).",
        },
        "headers": HEADERS,
        "model": {
            "type": "string",
            "minLength": 1,
            "description": "The model behind the service, to price its tokens (optional).",
        },
    },
}

DEFAULT_TIMEOUT = 30.0


def validate(config, *, strict=False):
    """The rules a schema cannot say; `strict` when the version is prepared for a run."""
    validate_headers(config.get("headers"), "config.headers")
    check_egress(
        "config.url",
        config["url"],
        secrets_of(config.get("headers"), "config.headers"),
        strict=strict,
    )


_clients: dict[int, Any] = {}  # one client per process id
_clients_lock = threading.Lock()
LIMITS = httpx2.Limits(max_connections=256, max_keepalive_connections=64)


def shared_client():
    """One connection pool per process, shared by every thread (keep-alive to the agent).

    Keyed by pid: django-q2 forks its workers, and a pool must not cross a fork.
    """
    pid = os.getpid()
    client = _clients.get(pid)
    if client is None:
        with _clients_lock:
            client = _clients.get(pid)
            if client is None:
                client = _clients[pid] = httpx2.Client(limits=LIMITS)
    return client


def post_json(url, body, *, headers, timeout, what):
    """POST JSON, return the decoded answer; every failure is an AgentCallError naming `what`."""
    with _failures(what, timeout):
        response = shared_client().post(url, json=body, headers=headers, timeout=timeout)
    return _answer(response, what)


async def apost_json(url, body, *, headers, timeout, what):
    """`post_json` on the running loop, through its own pool (`sherlock.core.aio`)."""
    client = loop_client(
        "http_endpoint",
        lambda: httpx2.AsyncClient(limits=LIMITS, verify=tls_context()),
        in_flight=settings.SHERLOCK_RUN_CONCURRENCY,
    )
    with _failures(what, timeout):
        response = await client.post(url, json=body, headers=headers, timeout=timeout)
    return _answer(response, what)


@contextlib.contextmanager
def _failures(what, timeout):
    try:
        yield
    except httpx2.TimeoutException:
        raise AgentCallError(f"{what}: no answer within {timeout:g} s") from None
    except (httpx2.LocalProtocolError, UnicodeEncodeError) as exc:
        # The request could not be written: a header value that is not valid HTTP, which the
        # library's message quotes whole (a secret, too), so the message is not kept.
        raise AgentCallError(
            f"{what}: the request is not valid HTTP ({type(exc).__name__}: a header's value is "
            "not allowed; the value is not shown)"
        ) from None
    except httpx2.HTTPError as exc:
        raise AgentCallError(f"{what}: {type(exc).__name__}: {exc}") from None


def _answer(response, what):
    if response.status_code >= 400:
        raise AgentCallError(f"{what}: HTTP {response.status_code}: {response.text[:300]}")
    try:
        return response.json()
    except ValueError:
        raise AgentCallError(f"{what}: the answer is not JSON: {response.text[:300]!r}") from None


class HttpAgent(PreparedAgent):
    def __init__(self, version):
        config = version.config
        validate(config, strict=True)  # today's rules: settings change, rows are written around
        self.url = config["url"]
        self.timeout = float(config.get("timeout", DEFAULT_TIMEOUT))
        self.headers = config.get("headers") or {}
        self.model = config.get("model")

    def _call(self, case, repetition):
        body, options = self._request(case, repetition)
        return self._transcript(post_json(self.url, body, **options))

    async def _acall(self, case, repetition):
        body, options = self._request(case, repetition)
        return self._transcript(await apost_json(self.url, body, **options))

    def _request(self, case, repetition):
        body = {"id": case.get("id"), "input": case.get("input"), "repetition": repetition}
        return body, {
            "headers": resolve_headers(self.headers, "config.headers"),
            "timeout": self.timeout,
            "what": f"POST {self.url}",
        }

    def _transcript(self, answer):
        if isinstance(answer, str):
            return {"output": answer}
        if not isinstance(answer, dict):
            raise AgentCallError(
                f"POST {self.url}: expected a transcript object, got {json.dumps(answer)[:200]}"
            )
        return answer
