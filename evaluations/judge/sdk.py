"""The judge's OpenAI SDK clients (one per process, or per event loop) and the one call they make.

One `openai.OpenAI` client, with the SDK's own default HTTP client (httpx2 and its connection
pool), is shared by every thread that asks synchronously (admin previews, `check_judge`, the
tests' sync mode): one client means warm keep-alive connections instead of a TCP handshake per
question. The run engine asks on its shard's event loop instead, through that loop's one
`openai.AsyncOpenAI` (`async_openai_client`, kept by `sherlock.core.aio.loop_client` and closed
with the loop), so hundreds of questions in flight are coroutines, not threads. The SDK's
retries are off (`max_retries=0`) in both: `retry.py` retries instead, to honour `Retry-After`
and to record every attempt as a `JudgeCall` row, which the SDK's hidden retries would not let us.

The completion cap travels as the parameter the server honours (`cap_parameter`): the SDK
documents `max_completion_tokens` for chat completions, and OpenAI refuses the deprecated
`max_tokens` for its reasoning models, while self-hosted servers (llama.cpp before 2026,
llamafile, llama-cpp-python, Ollama, older vLLM) honour `max_tokens` and silently ignore the
other, which leaves the answer uncapped. Sending both is refused by OpenAI ("Setting
'max_tokens' and 'max_completion_tokens' at the same time is not supported"), so one is sent.
"""

from __future__ import annotations

import json
import os
import threading
from urllib.parse import urlparse

import httpx2
import openai

from sherlock.core.aio import loop_client, tls_context

CAP_PARAMETERS = ("max_completion_tokens", "max_tokens")
# Hosts that are OpenAI's own API (and Azure OpenAI's), where the SDK's documented parameter is
# the one to send.
_OPENAI_HOSTS = ("api.openai.com",)
_OPENAI_HOST_SUFFIXES = (".openai.azure.com", ".openai.com")


def is_openai_host(base_url: str) -> bool:
    """Is this OpenAI's own API or Azure OpenAI (by host), rather than a self-hosted server?"""
    host = (urlparse(base_url).hostname or "").lower()
    return host in _OPENAI_HOSTS or host.endswith(_OPENAI_HOST_SUFFIXES)


def cap_parameter(base_url: str, choice: str = "auto") -> str:
    """The request parameter that carries the completion cap (`SHERLOCK_JUDGE_MAX_TOKENS_PARAM`).

    `auto`: `max_completion_tokens` (the SDK's documented one) on OpenAI's and Azure OpenAI's
    hosts, `max_tokens` on any other server, which is what self-hosted servers honour.
    """
    if choice in CAP_PARAMETERS:
        return choice
    return "max_completion_tokens" if is_openai_host(base_url) else "max_tokens"


_clients: dict[tuple[int, str, str], openai.OpenAI] = {}
_clients_lock = threading.Lock()


def openai_client(base_url: str, api_key: str | None, timeout: float = 60) -> openai.OpenAI:
    """The process's one SDK client (and connection pool) for this base URL and key.

    The SDK client is thread-safe; sharing it keeps connections warm across threads. The key
    includes the process id because django-q2 forks workers, and a pool inherited across a
    fork would share sockets between processes. `timeout` is only the client's default: each
    request passes its own.
    """
    key = (os.getpid(), base_url, api_key or "")
    client = _clients.get(key)
    if client is None:
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = openai.OpenAI(
                    base_url=base_url,
                    # Many OpenAI-compatible servers need no key, but the SDK insists on one.
                    api_key=api_key or "sk-none",
                    timeout=timeout,
                    max_retries=0,
                )
                _clients[key] = client
    return client


def async_openai_client(
    base_url: str, api_key: str | None, timeout: float = 60
) -> openai.AsyncOpenAI:
    """The running loop's one async SDK client (and connection pool) for this base URL and key.

    Its connections belong to the loop that opened them, so it is kept per loop
    (`sherlock.core.aio.loop_client`; the engine closes it with the loop). Like the sync one,
    its retries are off and `timeout` is only its default. Its HTTP goes through aiohttp, the
    SDK's documented transport for many requests in flight (`openai.DefaultAioHttpClient`, the
    `aiohttp` requirement): with httpx's async pool a question cost twice the CPU of a
    blocking one at 128 in flight (its pool probes every idle connection through anyio on
    each request), with aiohttp less than a blocking one (docs/judges.md).
    """
    return loop_client(
        ("judge", base_url, api_key or ""),
        lambda: openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "sk-none",
            timeout=timeout,
            max_retries=0,
            http_client=openai.DefaultAioHttpClient(verify=tls_context()),
        ),
    )


def chat_completion(sdk: openai.OpenAI, request: dict, timeout: float) -> dict:
    """The chat completion for `request` (a `/chat/completions` body), as the JSON it came in.

    Through the SDK's documented `client.post` for requests it has no typed method for,
    rather than `chat.completions.create`: the typed method walks the whole request (messages
    and the rubric's schema) through its TypedDict transform on every call, half of the
    client's CPU per question (bench/judge_cost.py), to send the very same JSON; and its
    pydantic model of the answer would only be dumped back. The request goes through the
    SDK's own send (headers, auth, timeout, its httpx2 client); a status, a timeout or a
    connection failure raises the SDK's exception, and a body that is not a JSON object
    raises ValueError.
    """
    response = sdk.post(
        "/chat/completions", body=request, cast_to=httpx2.Response, options={"timeout": timeout}
    )
    return _payload(response)


async def achat_completion(sdk: openai.AsyncOpenAI, request: dict, timeout: float) -> dict:
    """`chat_completion` through an async SDK client, awaited on its loop."""
    response = await sdk.post(
        "/chat/completions", body=request, cast_to=httpx2.Response, options={"timeout": timeout}
    )
    return _payload(response)


def _payload(response: httpx2.Response) -> dict:
    payload = json.loads(response.content)
    if not isinstance(payload, dict):
        raise ValueError("the response body is not a JSON object")
    return payload
