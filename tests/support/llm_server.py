"""A real OpenAI-compatible HTTP server on loopback, for the tests and the benchmarks.

External model calls are served by a real server that the official OpenAI
SDK talks to over HTTP, so the tests exercise the same wire format, connection pool, timeouts
and error mapping as production, with no mocks of the SDK internals.

It serves `POST /v1/chat/completions` and `GET /v1/models`. What it answers comes from, in
order: the scripted queue (`server.script([...])`), else `server.responder(request_json)`, else
a 500 saying the script ran out. A script item (or a responder's return value) is one of

    Reply(...)       an assistant message: text, a JSON answer (a dict is serialized as the
                     content), tool calls, a refusal; optional scripted usage and latency
    Fault(...)       an HTTP error (429 with Retry-After, 500, ...) or a hang past the client's
                     timeout
    dict / list      shorthand for Reply(content=that), i.e. a JSON answer
    str              shorthand for Reply(content=that), i.e. a text answer
    callable         called with the request JSON; returns any of the above

The helpers `rate_limited`, `server_error`, `hang`, `malformed`, `refusal`, `tool_call` spell
the common faults and answers. `schema_responder` answers any request generically: a valid
instance of the request's JSON schema, or a short text; benchmarks use it with a fixed
`latency` to play a judge model at scale.

Every chat request body is kept in `server.requests` (in arrival order) for assertions; every
HTTP request's method, path and lower-cased headers in `server.log`; `server.connections`
counts the TCP connections accepted (few means the client reuses pooled connections);
`in_flight` and `peak_in_flight` count the answers waiting out their latency, now and at most.
`record=False` keeps only `request_count`, for benchmarks that send many thousands.

This module is imported by bench/ scripts too, so it imports nothing from pytest; the pytest
fixture lives in `tests/support/judge_fixtures.py`.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Fault",
    "LLMServer",
    "Reply",
    "count_tokens",
    "hang",
    "instance_for_schema",
    "malformed",
    "rate_limited",
    "refusal",
    "schema_responder",
    "server_error",
    "tool_call",
]


@dataclass
class Reply:
    """One assistant answer.

    `content` may be a str (sent as is) or a dict/list (serialized as JSON, which is how a
    JSON-schema answer travels). `tool_calls` is a list of `{"name": ..., "arguments": {...}}`
    (arguments may also be a pre-serialized string); with tool calls the finish reason is
    "tool_calls". `usage=(prompt_tokens, completion_tokens)` overrides the rough count.
    `latency` (seconds) overrides the server's latency for this one answer.
    """

    content: Any = None
    tool_calls: list[dict] | None = None
    refusal: str | None = None
    finish_reason: str | None = None
    usage: tuple[int, int] | None = None
    latency: float | None = None
    model: str | None = None


@dataclass
class Fault:
    """An HTTP-level failure.

    `status` with `body` (a dict is sent as JSON; by default an OpenAI-style error object) and
    `headers` (e.g. Retry-After); `hang` seconds of silence before the server gives up on the
    connection without answering (a timeout, from the client's side).
    """

    status: int = 500
    message: str = "The server had an error while processing your request."
    retry_after: float | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    hang: float | None = None


def rate_limited(retry_after: float = 1, message: str = "Rate limit reached.") -> Fault:
    """A 429 with a Retry-After header (seconds; fractions are sent as `retry-after-ms` too)."""
    return Fault(status=429, message=message, retry_after=retry_after)


def server_error(status: int = 500, message: str | None = None) -> Fault:
    return Fault(status=status, message=message or Fault.message)


def hang(seconds: float = 30) -> Fault:
    """No answer for `seconds`, then the connection is closed: the client's timeout fires."""
    return Fault(status=0, hang=seconds)


def malformed(text: str = "Sure! The score is 0.8, because it is mostly right.") -> Reply:
    """An answer that is not JSON at all (for a schema-valid-but-wrong one, script a dict)."""
    return Reply(content=text)


def refusal(text: str = "I'm sorry, but I can't help with that.") -> Reply:
    return Reply(refusal=text)


def tool_call(name: str, arguments: dict | str | None = None, **kwargs) -> Reply:
    """An assistant message calling one tool; pass `tool_calls=[...]` to Reply for several."""
    return Reply(tool_calls=[{"name": name, "arguments": arguments or {}}], **kwargs)


# --- token counting -----------------------------------------------------------------------


def count_tokens(text: str | None) -> int:
    """A rough token count (about 4 characters a token), good enough for cost arithmetic."""
    if not text:
        return 0
    return (len(text) + 3) // 4


def _prompt_tokens(body: dict) -> int:
    total = 0
    for message in body.get("messages") or ():
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = " ".join(
                str(part.get("text", "")) for part in content if isinstance(part, dict)
            )
        total += 4 + count_tokens(content if isinstance(content, str) else None)
    return total


# --- a generic answerer -------------------------------------------------------------------


def instance_for_schema(schema: dict, rng: random.Random | None = None) -> Any:
    """A valid instance of a (strict, OpenAI structured-output style) JSON schema.

    Covers what structured outputs allow: objects (every property is produced, as strict mode
    requires them all), arrays (1-3 items, within minItems/maxItems), strings (within
    min/maxLength), numbers and integers (within minimum/maximum and the exclusive bounds),
    booleans, null, enum, const, anyOf/oneOf (the first branch), type lists, and local
    `$ref`s into `$defs`/`definitions`.
    """
    return _Generator(schema, rng or random.Random(0)).make(schema, 0)


class _Generator:
    _WORDS = ("supported", "relevant", "claim", "answer", "context", "complete", "yes", "clear")

    def __init__(self, root: dict, rng: random.Random):
        self.root = root
        self.rng = rng

    def make(self, schema: Any, depth: int) -> Any:
        if not isinstance(schema, dict) or depth > 24:
            return None
        if "$ref" in schema:
            return self.make(self._resolve(schema["$ref"]), depth + 1)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return self.rng.choice(schema["enum"])
        for key in ("anyOf", "oneOf", "allOf"):
            if schema.get(key):
                branch = schema[key][0]
                return self.make(branch, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            non_null = [k for k in kind if k != "null"]
            kind = non_null[0] if non_null else "null"
        if kind is None:
            kind = "object" if "properties" in schema else "string"
        maker = getattr(self, f"_{kind}", None)
        return maker(schema, depth) if maker else None

    def _resolve(self, ref: str) -> dict:
        if not ref.startswith("#/"):
            raise ValueError(f"only local $refs are supported, not {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def _object(self, schema: dict, depth: int) -> dict:
        properties = schema.get("properties") or {}
        return {name: self.make(sub, depth + 1) for name, sub in properties.items()}

    def _array(self, schema: dict, depth: int) -> list:
        low = max(1, schema.get("minItems", 0))
        high = max(low, min(3, schema.get("maxItems", 3)))
        items = schema.get("items") or {}
        prefix = schema.get("prefixItems") or []
        count = self.rng.randint(low, high)
        return [self.make(prefix[i] if i < len(prefix) else items, depth + 1) for i in range(count)]

    def _string(self, schema: dict, depth: int) -> str:
        text = " ".join(self.rng.choice(self._WORDS) for _ in range(self.rng.randint(1, 4)))
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        if len(text) < low:
            text = text + "x" * (low - len(text))
        if high is not None:
            text = text[:high]
        return text

    def _bounds(self, schema: dict, step: float) -> tuple[float, float]:
        low = schema.get("minimum", -math.inf)
        high = schema.get("maximum", math.inf)
        if "exclusiveMinimum" in schema:
            low = max(low, schema["exclusiveMinimum"] + step)
        if "exclusiveMaximum" in schema:
            high = min(high, schema["exclusiveMaximum"] - step)
        if low == -math.inf and high == math.inf:
            return 0, 1 if step < 1 else 10
        if low == -math.inf:
            return high - (1 if step < 1 else 10), high
        if high == math.inf:
            return low, low + (1 if step < 1 else 10)
        return low, high

    def _number(self, schema: dict, depth: int) -> float:
        low, high = self._bounds(schema, 1e-6)
        value = round(self.rng.uniform(low, high), 2)
        return min(max(value, low), high)

    def _integer(self, schema: dict, depth: int) -> int:
        low, high = self._bounds(schema, 1)
        return self.rng.randint(math.ceil(low), math.floor(high))

    def _boolean(self, schema: dict, depth: int) -> bool:
        return self.rng.random() < 0.5

    def _null(self, schema: dict, depth: int) -> None:
        return None


def schema_responder(request: dict) -> Reply | str:
    """Answer any request: a valid instance of its JSON schema, or a short text without one."""
    response_format = request.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema") or {}
        return Reply(content=instance_for_schema(schema, _shared_rng))
    if response_format.get("type") == "json_object":
        return Reply(content={"answer": "ok"})
    return "ok"


# One generator for the generic answers; random.Random is safe to share between threads.
_shared_rng = random.Random(1234)


# --- the server ---------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 with Content-Length on every answer keeps the SDK's pooled connections alive;
    # disabling Nagle avoids a 40 ms delayed-ACK stall on each small keep-alive response.
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format, *args):
        pass  # the tests' output is not the place for an access log

    def do_GET(self):
        owner = self.server.owner
        owner._note(self)
        if self.path.rstrip("/") == "/v1/models":
            data = [{"id": owner.model, "object": "model", "created": 0, "owned_by": "sherlock"}]
            self._send(200, {"object": "list", "data": data})
        elif self.path.rstrip("/") == "/props" and owner.llama_props is not None:
            self._send(200, owner.llama_props)
        else:
            self._send(404, _error_body("Not found.", "invalid_request_error", None))

    def do_POST(self):
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        owner._note(self)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, _error_body("Not found.", "invalid_request_error", None))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, _error_body("Request body is not JSON.", "invalid_request_error", None))
            return
        owner._record(body)
        if body.get("stream"):
            # Say so plainly rather than send JSON to a client that waits for server-sent events.
            self._send(
                400, _error_body("llm_server does not stream.", "invalid_request_error", None)
            )
            return
        try:
            spec = owner._next_spec(body)
        except Exception as exc:  # a broken responder must show up in the test, not hang it
            spec = Fault(status=500, message=f"llm_server responder failed: {exc!r}")
        if isinstance(spec, Fault):
            self._fault(spec, owner)
            return
        reply = spec
        latency = owner.latency if reply.latency is None else reply.latency
        if latency:
            owner._in_flight(+1)
            try:
                time.sleep(latency)
            finally:
                owner._in_flight(-1)
        self._send(200, owner._completion(body, reply))

    def _fault(self, fault: Fault, owner: LLMServer):
        if fault.hang is not None:
            # Wait on the server's wake-up event rather than sleep, so that stopping or
            # resetting the server releases hung handlers at once.
            owner._wake.wait(fault.hang)
            self.close_connection = True
            return
        headers = dict(fault.headers)
        if fault.retry_after is not None:
            headers["Retry-After"] = str(math.ceil(fault.retry_after))
            headers["retry-after-ms"] = str(int(fault.retry_after * 1000))
        body = fault.body
        if body is None:
            kind = "rate_limit_error" if fault.status == 429 else "server_error"
            body = _error_body(fault.message, kind, str(fault.status))
        if owner.latency:
            time.sleep(owner.latency)
        self._send(fault.status, body, headers)

    def _send(self, status: int, body: Any, headers: dict | None = None):
        payload = body if isinstance(body, bytes) else _dumps(body).encode()
        lines = [
            f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}",
            "Content-Type: application/json",
            f"Content-Length: {len(payload)}",
        ]
        lines.extend(f"{name}: {value}" for name, value in (headers or {}).items())
        # One write for the head and the body: one packet for a small answer.
        try:
            self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout fired)


def _error_body(message: str, kind: str, code: str | None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # hung handlers must not hold up stop()
    request_queue_size = 256  # the default backlog of 5 drops connections at concurrency 32
    allow_reuse_address = True
    owner: LLMServer

    def process_request(self, request, client_address):
        self.owner.connections += 1  # only the serving thread accepts: no race
        super().process_request(request, client_address)


class LLMServer:
    """The loopback server: start/stop it (or use it as a context manager), script its answers.

    `url` is the base URL for the SDK (`http://127.0.0.1:PORT/v1`). `latency` (seconds) is
    added to every answer and blocks only that request's thread. `model` is what the answers
    and `/v1/models` name when the request does not say. `llama_props`, when set, makes it
    answer as llama.cpp's server does: `GET /props` (at the root, not under `/v1`) returns it,
    and every completion carries llama.cpp's `timings`.
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        responder: Callable[[dict], Any] | None = schema_responder,
        model: str = "sherlock-test-judge",
        host: str = "127.0.0.1",
        port: int = 0,
        record: bool = True,
    ):
        self.latency = latency
        self.record = record  # False for long benchmarks: count requests, keep no bodies
        self.default_responder = responder
        self.responder = responder
        self.model = model
        self.llama_props: dict | None = None
        self.requests: list[dict] = []
        self.log: list[tuple[str, str, dict]] = []
        self.connections = 0  # TCP connections accepted: keep-alive reuse shows as few
        self.request_count = 0
        # Answers being waited for (their latency running) now, and the most there ever were.
        self.in_flight = 0
        self.peak_in_flight = 0
        self._queue: deque = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._counter = 0
        self._host, self._port = host, port
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle --

    def start(self) -> LLMServer:
        if self._httpd is not None:
            return self
        self._wake = threading.Event()
        httpd = _Server((self._host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.name = f"llm-server:{httpd.server_address[1]}"
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._wake.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the LLM server is not running")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    base_url = url

    # -- scripting --

    def script(self, items) -> LLMServer:
        """Queue answers, served one per chat request in order, before the responder."""
        with self._lock:
            self._queue.extend(items)
        return self

    @property
    def pending(self) -> int:
        """How many scripted answers are still queued."""
        return len(self._queue)

    def reset(self) -> None:
        """Forget requests and script; back to the default responder, no latency, not llama.cpp."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.log.clear()
            self.connections = 0
            self.request_count = 0
        self.responder = self.default_responder
        self.latency = 0.0
        self.peak_in_flight = self.in_flight
        self.llama_props = None
        # Release the handlers of any hang from before, then arm a fresh event.
        old, self._wake = self._wake, threading.Event()
        old.set()

    # -- used by the handler --

    def _note(self, handler: _Handler) -> None:
        if self.record:
            headers = {name.lower(): value for name, value in handler.headers.items()}
            self.log.append((handler.command, handler.path, headers))

    def _in_flight(self, change: int) -> None:
        with self._lock:
            self.in_flight += change
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _record(self, body: dict) -> None:
        with self._lock:
            self.request_count += 1
        if self.record:
            self.requests.append(body)  # list.append is atomic under the GIL

    def _next_spec(self, body: dict) -> Reply | Fault:
        with self._lock:
            item = self._queue.popleft() if self._queue else None
        if item is None:
            if self.responder is None:
                return Fault(status=500, message="llm_server: the script ran out of answers")
            item = self.responder
        for _ in range(4):  # a scripted callable may return another callable, a few times
            if callable(item) and not isinstance(item, (Reply, Fault)):
                item = item(body)
        if isinstance(item, (Reply, Fault)):
            return item
        if isinstance(item, (dict, list, str)):
            return Reply(content=item)
        raise TypeError(f"llm_server cannot answer with {item!r}")

    def _completion(self, body: dict, reply: Reply) -> dict:
        with self._lock:
            self._counter += 1
            number = self._counter
        content = reply.content
        if content is not None and not isinstance(content, str):
            content = _dumps(content)
        message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
        finish = reply.finish_reason or "stop"
        completion_text = content or ""
        if reply.refusal is not None:
            message["content"] = None
            message["refusal"] = reply.refusal
            completion_text = reply.refusal
        if reply.tool_calls:
            calls = []
            for index, call in enumerate(reply.tool_calls):
                arguments = call.get("arguments", {})
                if not isinstance(arguments, str):
                    arguments = _dumps(arguments)
                call_id = call.get("id") or f"call_{number}_{index}"
                function = {"name": call["name"], "arguments": arguments}
                calls.append({"id": call_id, "type": "function", "function": function})
                completion_text += call["name"] + arguments
            message["tool_calls"] = calls
            finish = reply.finish_reason or "tool_calls"
        if reply.usage is not None:
            prompt_tokens, completion_tokens = reply.usage
        else:
            prompt_tokens, completion_tokens = _prompt_tokens(body), count_tokens(completion_text)
        answer = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or body.get("model") or self.model,
            "system_fingerprint": "fp_sherlock_loopback",
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        if self.llama_props is not None:
            answer["timings"] = {"prompt_n": prompt_tokens, "predicted_n": completion_tokens}
        return answer
