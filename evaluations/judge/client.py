"""The judge client: one way for every model-based check to ask a judge model (DESIGN section 8).

Why it looks the way it does:

- One OpenAI SDK client per process and base URL (`openai_client`), shared by every thread: the
  run engine scores many trials at once, and one client means one httpx connection pool with
  warm keep-alive connections instead of a TCP handshake per question.
- The SDK's own retries are off (`max_retries=0`): we retry ourselves, to honour `Retry-After`
  on 429 and 5xx, to back off exponentially on 5xx, timeouts and connection errors, and to
  record every attempt as a `JudgeCall` row, which the SDK's hidden retries would not let us.
- Every answer is a structured output against the rubric's strict JSON schema, temperature 0
  and a fixed seed, and is validated with `jsonschema` on arrival. A malformed answer (not JSON,
  not valid against the schema, a refusal, cut off) is re-asked once with a short repair
  instruction; after that the ask is an error that keeps the raw answer (evaluators.md section 8:
  RAGAS' one "fix output format" re-prompt).
- A judge failure is never a score: `JudgeAnswer.ok` is False with `error` and `error_code`,
  and `data` is None. The check turns that into status `error`, never `failed` or `passed`.
- Repeated questions are answered from a cache (see `evaluations.judge.cache`), and the hit is
  still recorded as a `JudgeCall` row with `cached=True`, so a result's evidence always points
  at a stored answer.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

import httpx2
import openai
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from jsonschema import validators
from jsonschema.exceptions import best_match
from openai._httpx2 import request_exceptions, status_exceptions, timeout_exceptions
from openai._models import FinalRequestOptions
from openai._utils._json import openapi_dumps

from evaluations.judge.cache import AnswerCache, CachedAnswer, cache_key, canonical_json, sha256
from evaluations.judge.recording import (
    CacheLookup,
    JudgeContext,
    Recorder,
    lookup_cached,
    record_calls,
)
from evaluations.judge.transport import KeepAliveTransport

if TYPE_CHECKING:
    from evaluations.checks.rubrics import Rubric
    from evaluations.models import JudgeCall

__all__ = [
    "DEFAULT_SEED",
    "JudgeAnswer",
    "JudgeClient",
    "get_default_judge",
    "openai_client",
    "reset_default_judges",
]

DEFAULT_SEED = 7
DEFAULT_MAX_RETRIES = 3
DEFAULT_BASE_BACKOFF = 0.5
DEFAULT_MAX_BACKOFF = 8.0
DEFAULT_MAX_RETRY_AFTER = 60.0

REPAIR_INSTRUCTION = (
    "Your previous answer could not be used: {problem}. Answer the same question again with "
    "only a JSON object that matches the required JSON schema, and no other text."
)

# Error codes of a failed ask (`JudgeAnswer.error_code`), for check reasons and filters.
RATE_LIMITED = "rate_limited"
SERVER_ERROR = "server_error"
TIMEOUT = "timeout"
CONNECTION = "connection"
HTTP_ERROR = "http_error"
MALFORMED = "malformed"
REFUSED = "refused"

_MAX_ERROR_TEXT = 1000


@dataclass
class JudgeAnswer:
    """The outcome of one ask.

    `ok` with `data` (the validated answer object), or not `ok` with `error` (and
    `error_code`, one of the module's codes); never both. `raw` is the judge's last answer text
    as it came (kept for an error too: the evidence of what went wrong). `calls` are the
    `JudgeCall` instances of this ask, one per HTTP attempt or the one cache hit, saved when
    the recorder is the ORM one. `cached` says the answer came from the cache without a call.
    """

    ok: bool
    data: dict | None = None
    error: str | None = None
    raw: str | None = None
    calls: list[JudgeCall] = field(default_factory=list)
    cached: bool = False
    error_code: str | None = None
    model: str = ""
    cache_key: str = ""

    @property
    def call_ids(self) -> list[int]:
        """The stored calls' ids, for `CheckResult` evidence."""
        return [call.pk for call in self.calls if call.pk is not None]

    @property
    def http_calls(self) -> int:
        """How many requests this ask sent (0 for a cache hit)."""
        return sum(1 for call in self.calls if not call.cached)

    @property
    def prompt_tokens(self) -> int:
        return sum(call.prompt_tokens for call in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(call.completion_tokens for call in self.calls)


# --- shared SDK clients ---------------------------------------------------------------------

_sdk_clients: dict[tuple[int, str, str], openai.OpenAI] = {}
_sdk_clients_lock = threading.Lock()


def openai_client(base_url: str, api_key: str | None, timeout: float = 60) -> openai.OpenAI:
    """The process's one SDK client (and httpx connection pool) for this base URL and key.

    The SDK client is thread-safe; sharing it keeps connections warm across threads. The key
    includes the process id because django-q2 forks workers, and a pool inherited across a
    fork would share sockets between processes. `timeout` is only the client's default: each
    request passes its own.
    """
    key = (os.getpid(), base_url, api_key or "")
    client = _sdk_clients.get(key)
    if client is None:
        with _sdk_clients_lock:
            client = _sdk_clients.get(key)
            if client is None:
                client = openai.OpenAI(
                    base_url=base_url,
                    # Many OpenAI-compatible servers need no key, but the SDK insists on one.
                    api_key=api_key or "sk-none",
                    timeout=timeout,
                    # max_retries=0 on the SDK: we do our own retries, to honour Retry-After
                    # and to record every attempt.
                    max_retries=0,
                    http_client=_http_client(base_url),
                )
                _sdk_clients[key] = client
    return client


def _http_client(base_url: str) -> httpx2.Client | None:
    """The SDK's HTTP client: its defaults, over our keep-alive transport (`transport.py`,
    a third of httpcore2's CPU per request) unless `SHERLOCK_JUDGE_TRANSPORT=httpx` or a proxy
    from the environment applies to the URL: the lean transport speaks no proxy, so that
    client keeps httpx2's, decided by httpx2's own rules. None means the SDK's own default."""
    if getattr(settings, "SHERLOCK_JUDGE_TRANSPORT", "keepalive") != "keepalive":
        return None
    plain = openai.DefaultHttpxClient()
    if plain._transport_for_url(httpx2.URL(base_url)) is not plain._transport:
        return plain  # a proxy mount matched
    plain.close()
    return openai.DefaultHttpxClient(transport=KeepAliveTransport())


# RFC 9110 field names (tokens) and values (visible characters, space, tab; obs-text).
_FIELD_NAME = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_FIELD_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")


class _Poster:
    """`sdk.post("/chat/completions", body=..., cast_to=httpx2.Response, options={"timeout": t})`
    with the part of the request that never changes built once.

    The SDK rebuilds, on every request, the same options model, headers (auth, platform,
    read timeout, retry count 0 since its retries are off), URL and timeout: about 40% of the
    client's CPU per call. Here the SDK builds one template request with its own machinery,
    and each call copies it with the new body and Content-Length, then goes through the SDK's
    own send (auth retry, provider hooks), or straight to our transport when nothing in
    between would act on it, and maps errors to the same SDK exceptions as `post`. A client
    with per-request behaviour (an API key provider, workload identity, a provider runtime, an
    idempotency header, custom auth) keeps using `post` itself.
    """

    def __init__(self, sdk: openai.OpenAI, timeout: float):
        self.sdk = sdk
        self.timeout = timeout
        self.headers: list[tuple[bytes, bytes]] | None = None
        self.transport: KeepAliveTransport | None = None
        try:
            self._build_template()
        except Exception:  # whatever it is, `post` raises it in the caller's try
            self.headers = None

    def _build_template(self) -> None:
        sdk = self.sdk
        if (
            sdk._idempotency_header
            or getattr(sdk, "_provider_runtime", None) is not None
            or getattr(sdk, "_api_key_provider", None) is not None
            or getattr(sdk, "_workload_identity_auth", None) is not None
        ):
            return
        options = FinalRequestOptions.construct(
            method="post", url="/chat/completions", json_data={}, timeout=self.timeout
        )
        options = sdk._prepare_options(options)
        if sdk._custom_auth(options.security) is not None or options.follow_redirects is not None:
            return
        template = sdk._build_request(options, retries_taken=0)
        sdk._prepare_request(template)
        if sdk._should_stream_response_body(request=template):
            return
        headers = list(template.headers.raw)
        lengths = [i for i, (key, _) in enumerate(headers) if key.lower() == b"content-length"]
        if len(lengths) != 1 or any(key.lower() == b"transfer-encoding" for key, _ in headers):
            return
        self.url = template.url
        self.extensions = dict(template.extensions)
        self.length_at = lengths[0]
        self.length_key = headers[self.length_at][0]
        # Straight to our keep-alive transport when the httpx2 client around it would do
        # nothing to this request: no auth, no event hooks, no cookies (the SDK sets its
        # headers itself). What it skips then is the SDK's auth-retry hook (none without a
        # provider, checked above) and httpx2's redirect following: a 3xx is an HTTP error.
        # The request then goes out as bytes: the template's head with the body's length.
        client = sdk._client
        transport = client._transport_for_url(template.url)
        plain = client.auth is None and not any(client.event_hooks.values()) and not client.cookies
        if plain and isinstance(transport, KeepAliveTransport):
            self.transport = transport
            fixed = [pair for i, pair in enumerate(headers) if i != self.length_at]
            self.head = b"".join(
                [
                    b"POST %s HTTP/1.1\r\n" % template.url.raw_path,
                    *(b"%s: %s\r\n" % pair for pair in fixed),
                    self.length_key,
                    b": ",
                ]
            )
            if not all(_FIELD_NAME.fullmatch(k) and _FIELD_VALUE.fullmatch(v) for k, v in fixed):
                self.transport = None  # httpx2 refuses such a header (a key ending in CR...)
        self.headers = headers

    def __call__(self, body: dict) -> bytes:
        """The body of the judge's 2xx answer (decoded), or the SDK's exception for it."""
        sdk = self.sdk
        if self.headers is None:
            return sdk.post(
                "/chat/completions",
                body=body,
                cast_to=httpx2.Response,
                options={"timeout": self.timeout},
            ).content
        content = openapi_dumps(body)
        request = None
        # As the SDK's `request` does with its own retries off.
        try:
            if self.transport is not None:
                raw = self.transport.exchange(
                    self.url,
                    b"%s%d\r\n\r\n%s" % (self.head, len(content), content),
                    self.extensions["timeout"],
                )
                if 200 <= raw.status < 300 and not _encoded(raw.headers):
                    return raw.body
                request = self._request(content)
                response = raw.to_httpx(request)
                response.read()
            else:
                request = self._request(content)
                response = sdk._send_request(request, stream=False)
        except timeout_exceptions() as err:
            raise openai.APITimeoutError(request=request or self._request(content)) from err
        except openai.OpenAIError:
            raise
        except request_exceptions() as err:
            raise openai.APIConnectionError(request=request or self._request(content)) from err
        try:
            response.raise_for_status()
        except status_exceptions() as err:
            if not err.response.is_closed:
                err.response.read()
            raise sdk._make_status_error_from_response(err.response) from None
        return response.content

    def _request(self, content: bytes) -> httpx2.Request:
        headers = self.headers.copy()
        headers[self.length_at] = (self.length_key, str(len(content)).encode())
        return httpx2.Request(
            "POST", self.url, headers=headers, content=content, extensions=self.extensions
        )


def _encoded(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a body has a Content-Encoding other than identity (httpx2 decodes those)."""
    return any(
        name.lower() == b"content-encoding" and value.strip().lower() not in (b"", b"identity")
        for name, value in headers
    )


_posters: dict[tuple[int, float], _Poster] = {}


def _poster(sdk: openai.OpenAI, timeout: float) -> _Poster:
    poster = _posters.get((id(sdk), timeout))
    if poster is None or poster.sdk is not sdk:
        # A race builds it twice, harmlessly. SDK clients live as long as the process.
        poster = _posters[(id(sdk), timeout)] = _Poster(sdk, timeout)
    return poster


# --- rubrics, prepared once -----------------------------------------------------------------


@dataclass(frozen=True)
class _PreparedRubric:
    """What a rubric's schema costs to use, paid once: the response_format, the schema hash
    that goes into cache keys, and a compiled validator."""

    schema: dict  # held so that the id() it is filed under stays unique while it lives
    response_format: dict
    schema_hash: str
    validator: Any
    # A plain-Python check for the schemas rubrics use; True only when the answer is valid
    # for certain (otherwise the jsonschema validator decides, and words the problem).
    quick_check: Any = None
    # What a stored JudgeCall keeps of the response_format: the schema by its hash. The schema
    # itself is the rubric's (id and version are on the row), the same in every call; storing
    # it again in each row would cost space and the CPU to encode it, per call.
    stored_response_format: dict | None = None


def _stored_request(request: dict, prepared: _PreparedRubric) -> dict:
    if request.get("response_format") is not prepared.response_format:
        return request
    return {**request, "response_format": prepared.stored_response_format}


_prepared: dict[tuple[int, str], _PreparedRubric] = {}
_PREPARED_MAX = 1024
_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def _prepare(rubric: Rubric) -> _PreparedRubric:
    schema = rubric.schema
    key = (id(schema), rubric.id)
    prepared = _prepared.get(key)
    if prepared is not None and prepared.schema is schema:
        return prepared
    # An invalid schema is a bug in the rubric, not a judge failure: let SchemaError raise.
    validator_class = validators.validator_for(schema)
    validator_class.check_schema(schema)
    name = _SCHEMA_NAME.sub("_", rubric.id)[:64] or "answer"
    schema_hash = sha256(canonical_json(schema))
    prepared = _PreparedRubric(
        schema=schema,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": True},
        },
        schema_hash=schema_hash,
        validator=validator_class(schema),
        quick_check=_quick_check(schema),
        stored_response_format={
            "type": "json_schema",
            "json_schema": {"name": name, "schema": {"sha256": schema_hash}, "strict": True},
        },
    )
    if len(_prepared) >= _PREPARED_MAX:  # rubrics built on the fly must not grow this forever
        _prepared.clear()
    _prepared[key] = prepared
    return prepared


# Schema keywords that say nothing about validity (annotations).
_ANNOTATIONS = frozenset({"title", "description", "$comment", "default", "examples"})
_QUICK_TYPES = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    # Integral floats (1.0) are integers to jsonschema: left to it.
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def _quick_check(schema):
    """A predicate that is True only for instances valid against `schema`, for the keywords
    rubric schemas use (type, properties, required, additionalProperties: false, items, enum
    of scalars); None for a schema using anything else. False means "ask jsonschema", which
    decides (and words the problem), so the predicate may be stricter, never looser."""
    if not isinstance(schema, dict):
        return None
    if (
        set(schema)
        - _ANNOTATIONS
        - {
            "type",
            "properties",
            "required",
            "additionalProperties",
            "items",
            "enum",
        }
    ):
        return None
    tests = []
    kind = schema.get("type")
    if kind is not None:
        if not isinstance(kind, str) or kind not in _QUICK_TYPES:
            return None
        tests.append(_QUICK_TYPES[kind])
    if "enum" in schema:
        enum = schema["enum"]
        if not isinstance(enum, list) or not all(
            value is None or isinstance(value, (str, int, float, bool)) for value in enum
        ):
            return None
        allowed = [(type(value), value) for value in enum]
        tests.append(lambda v: (type(v), v) in allowed)
    if "properties" in schema or "required" in schema or "additionalProperties" in schema:
        if kind != "object":
            return None
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        closed = schema.get("additionalProperties", True)
        if (
            not isinstance(properties, dict)
            or not isinstance(required, list)
            or closed not in (True, False)
        ):
            return None
        checks = {}
        for name, subschema in properties.items():
            check = _quick_check(subschema)
            if check is None:
                return None
            checks[name] = check
        required = tuple(required)
        items = tuple(checks.items())

        def object_test(v):
            if closed is False and any(name not in checks for name in v):
                return False
            if any(name not in v for name in required):
                return False
            return all(check(v[name]) for name, check in items if name in v)

        tests.append(object_test)
    if "items" in schema:
        if kind != "array":
            return None
        item_check = _quick_check(schema["items"])
        if item_check is None:
            return None
        tests.append(lambda v: all(item_check(item) for item in v))
    tests = tuple(tests)
    return lambda v: all(test(v) for test in tests)


# --- the client -----------------------------------------------------------------------------


@dataclass
class _Core:
    """The shared, thread-safe part of a judge: configuration, SDK client, cache, recorder."""

    base_url: str
    api_key: str
    model: str
    timeout: float
    max_retries: int
    base_backoff: float
    max_backoff: float
    max_retry_after: float
    temperature: float
    seed: int | None
    recorder: Recorder | None
    cache_lookup: CacheLookup | None
    cache: AnswerCache

    @property
    def sdk(self) -> openai.OpenAI:
        # Looked up per request (a dict hit) rather than held, so that a judge built before
        # django-q2 forks a worker gets the worker's own pool, never the parent's sockets.
        return openai_client(self.base_url, self.api_key, self.timeout)

    def backoff(self, retry: int) -> float:
        # Exponential with jitter, so threads that failed together do not retry together.
        ceiling = min(self.max_backoff, self.base_backoff * (2**retry))
        return ceiling * random.uniform(0.5, 1.0)

    @property
    def worst_case_seconds(self) -> float:
        """An upper bound on one ask's duration (two questions, every retry used)."""
        wait = max(self.max_backoff, self.max_retry_after)
        return 2 * (self.max_retries + 1) * (self.timeout + wait) + 1


@dataclass(frozen=True)
class _Question:
    rubric_id: str
    rubric_version: int
    prepared: _PreparedRubric
    model: str
    messages: list[dict]
    request: dict
    prompt_hash: str
    cache_key: str


@dataclass
class _Failure:
    error: str
    code: str


class JudgeClient:
    """Asks a judge model to answer a rubric, and records what it cost.

    Build one per configuration (usually through `get_default_judge`) and share it; `bind`
    returns a lightweight view carrying the run, trial and agent that calls are recorded
    against, sharing the SDK client, cache and recorder. Thread-safe.

    Arguments left as None come from settings: `SHERLOCK_JUDGE_BASE_URL`, `OPENAI_API_KEY`,
    `SHERLOCK_JUDGE_MODEL`, `SHERLOCK_JUDGE_TIMEOUT`, and (optional, with defaults)
    `SHERLOCK_JUDGE_MAX_RETRIES`, `SHERLOCK_JUDGE_MAX_BACKOFF`, `SHERLOCK_JUDGE_SEED`.
    `recorder=None` records nothing; `cache_lookup=None` keeps the cache in memory only;
    `cache_size=0` turns the in-memory cache off.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        base_backoff: float = DEFAULT_BASE_BACKOFF,
        max_backoff: float | None = None,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        temperature: float = 0.0,
        seed: int | None = None,
        recorder: Recorder | None = record_calls,
        cache_lookup: CacheLookup | None = lookup_cached,
        cache_size: int = 4096,
    ):
        base_url = base_url if base_url is not None else settings.SHERLOCK_JUDGE_BASE_URL
        if not base_url:
            raise ImproperlyConfigured("the judge needs SHERLOCK_JUDGE_BASE_URL (or base_url=)")
        api_key = api_key if api_key is not None else (settings.OPENAI_API_KEY or "")
        timeout = float(timeout if timeout is not None else settings.SHERLOCK_JUDGE_TIMEOUT)
        if max_retries is None:
            max_retries = getattr(settings, "SHERLOCK_JUDGE_MAX_RETRIES", DEFAULT_MAX_RETRIES)
        if max_backoff is None:
            max_backoff = getattr(settings, "SHERLOCK_JUDGE_MAX_BACKOFF", DEFAULT_MAX_BACKOFF)
        if seed is None:
            seed = getattr(settings, "SHERLOCK_JUDGE_SEED", DEFAULT_SEED)
        self._core = _Core(
            base_url=base_url,
            api_key=api_key,
            model=model or settings.SHERLOCK_JUDGE_MODEL,
            timeout=timeout,
            max_retries=max(0, int(max_retries)),
            base_backoff=base_backoff,
            max_backoff=float(max_backoff),
            max_retry_after=max_retry_after,
            temperature=temperature,
            seed=seed,
            recorder=recorder,
            cache_lookup=cache_lookup,
            cache=AnswerCache(cache_size),
        )
        self._context = JudgeContext()

    # -- configuration and context --

    @property
    def model(self) -> str:
        """The default judge model (a check may ask another with `ask(..., model=)`)."""
        return self._core.model

    @property
    def context(self) -> JudgeContext:
        return self._context

    def bind(self, *, run=None, trial=None, agent=None, repetition=None) -> JudgeClient:
        """A view of this judge that records its calls against a run, trial and agent.

        Each may be a model instance or a primary key; unset ones keep the current binding.
        A `Trial` instance also gives its run and `repetition` (the agent repetition, which
        keeps the cache from sharing judgements between repetitions, DESIGN section 8), and a
        `Run` instance gives its agent (pass `agent=` to save that lookup).
        """
        current = self._context
        run_id = _pk(run) if run is not None else current.run_id
        trial_id = _pk(trial) if trial is not None else current.trial_id
        agent_id = _pk(agent) if agent is not None else current.agent_id
        if trial is not None and not isinstance(trial, int):
            if run is None and getattr(trial, "run_id", None) is not None:
                run_id = trial.run_id
            if repetition is None and getattr(trial, "repetition", None) is not None:
                repetition = trial.repetition
        if agent is None and current.agent_id is None and run is not None:
            # The cost ledger is kept per agent: a Run instance knows it (one query per bind
            # at most, i.e. per trial); a bare run id is resolved by the recorder instead.
            agent_version = getattr(run, "agent_version", None)
            agent_id = getattr(agent_version, "agent_id", None)
        view = object.__new__(JudgeClient)
        view._core = self._core
        view._context = JudgeContext(
            run_id=run_id,
            trial_id=trial_id,
            agent_id=agent_id,
            repetition=current.repetition if repetition is None else int(repetition),
        )
        return view

    def clear_cache(self) -> None:
        """Forget the in-memory cache (stored calls still answer through `cache_lookup`)."""
        self._core.cache.clear()

    # -- asking --

    def ask(
        self, rubric: Rubric, variables: dict, *, model: str | None = None, cache: bool = True
    ) -> JudgeAnswer:
        """Ask the judge to answer `rubric` for `variables`; never raises for a judge failure.

        The user prompt is `rubric.template.format(**variables)` under `rubric.system`. With
        `cache=False` the question always goes to the model (the call is still recorded and
        can serve later asks).
        """
        started = time.perf_counter()
        core = self._core
        question = self._question(rubric, variables, model or core.model)
        if not cache:
            answer = self._ask_model(question)
            if answer.ok:
                core.cache.put(question.cache_key, _entry_of(answer))
            return answer
        entry, lead = core.cache.claim(question.cache_key, wait=core.worst_case_seconds)
        if entry is not None:
            answer = self._from_cache(question, entry, started)
            if answer is not None:
                return answer
        try:
            if core.cache_lookup is not None:
                entry = core.cache_lookup(question.cache_key)
                if entry is not None:
                    answer = self._from_cache(question, entry, started)
                    if answer is not None:
                        core.cache.put(question.cache_key, entry)
                        return answer
            answer = self._ask_model(question)
            if answer.ok:
                # Filed before the waiting askers are released, so they find it.
                core.cache.put(question.cache_key, _entry_of(answer))
            return answer
        finally:
            if lead is not None:
                core.cache.release(question.cache_key, lead)

    def _question(self, rubric: Rubric, variables: dict, model: str) -> _Question:
        core = self._core
        prepared = _prepare(rubric)
        user = {"role": "user", "content": rubric.template.format(**variables)}
        messages = [{"role": "system", "content": rubric.system}, user] if rubric.system else [user]
        messages_json = canonical_json(messages)
        request = {
            "model": model,
            "messages": messages,
            "response_format": prepared.response_format,
            "temperature": core.temperature,
        }
        if core.seed is not None:
            request["seed"] = core.seed
        return _Question(
            rubric_id=rubric.id,
            rubric_version=rubric.version,
            prepared=prepared,
            model=model,
            messages=messages,
            request=request,
            prompt_hash=sha256(messages_json),
            cache_key=cache_key(
                model=model,
                messages_json=messages_json,
                schema_hash=prepared.schema_hash,
                temperature=core.temperature,
                seed=core.seed,
                repetition=self._context.repetition,
            ),
        )

    def _from_cache(
        self, question: _Question, entry: CachedAnswer, started: float
    ) -> JudgeAnswer | None:
        try:
            data = json.loads(entry.raw)
        except (TypeError, ValueError):
            return None  # never serve junk; ask the model instead
        call = self._call(
            question,
            question.request,
            attempt=1,
            cached=True,
            response={"cached_from": entry.source_call_id},
            raw=entry.raw,
            latency_ms=(time.perf_counter() - started) * 1000,
        )
        self._record([call])
        return JudgeAnswer(
            ok=True,
            data=data,
            raw=entry.raw,
            calls=[call],
            cached=True,
            model=question.model,
            cache_key=question.cache_key,
        )

    def _ask_model(self, question: _Question) -> JudgeAnswer:
        """The question, with transport retries, and one repair re-ask for a malformed answer."""
        calls: list[JudgeCall] = []
        request = question.request
        raw: str | None = None
        outcome: _Failure | None = None
        data: dict | None = None
        for round_ in range(2):  # the question, then at most one repair
            sent = self._send(question, request, calls)
            if isinstance(sent, _Failure):
                outcome = sent
                break
            payload, latency_ms = sent
            data, raw, problem, code = _read_answer(payload, question.prepared)
            usage = payload.get("usage") or {}
            call = self._call(
                question,
                request,
                attempt=len(calls) + 1,
                response=payload,
                raw=raw,
                latency_ms=latency_ms,
                prompt_tokens=usage.get("prompt_tokens") or 0,
                completion_tokens=usage.get("completion_tokens") or 0,
                error=problem,
            )
            calls.append(call)
            if problem is None:
                outcome = None
                break
            if round_ == 0:
                outcome = _Failure(f"malformed answer: {problem}", code)
            else:
                outcome = _Failure(f"malformed answer after a repair retry: {problem}", code)
            # The repair: the judge sees its own answer and what was wrong with it.
            request = {
                **question.request,
                "messages": [
                    *question.messages,
                    {"role": "assistant", "content": raw or ""},
                    {"role": "user", "content": REPAIR_INSTRUCTION.format(problem=problem)},
                ],
            }
        self._record(calls)
        if outcome is not None:
            return JudgeAnswer(
                ok=False,
                error=outcome.error,
                error_code=outcome.code,
                raw=raw,
                calls=calls,
                model=question.model,
                cache_key=question.cache_key,
            )
        return JudgeAnswer(
            ok=True,
            data=data,
            raw=raw,
            calls=calls,
            model=question.model,
            cache_key=question.cache_key,
        )

    def _send(
        self, question: _Question, request: dict, calls: list
    ) -> tuple[dict, float] | _Failure:
        """One request with transport retries; every failed attempt becomes a recorded call.

        Returns the response JSON and its latency, or the last failure once retries run out.
        """
        core = self._core
        failure = _Failure("no attempt made", CONNECTION)
        attempts = 0
        for retry in range(core.max_retries + 1):
            attempts += 1
            started = time.perf_counter()
            retry_after = None
            response = None
            try:
                # The SDK's low-level `post` rather than `chat.completions.create` (no typed
                # params transform, no pydantic models we would dump straight back), with the
                # request's fixed part built once (`_Poster`). The wire request is the same.
                payload = json.loads(_poster(core.sdk, core.timeout)(request))
                if not isinstance(payload, dict):
                    raise ValueError("the response body is not a JSON object")
                return payload, (time.perf_counter() - started) * 1000
            except openai.APIStatusError as exc:
                status = exc.status_code
                retry_after = _retry_after(exc.response.headers)
                response = {"status_code": status, "body": _jsonable(exc.body)}
                retryable = status in (408, 409, 429) or status >= 500
                if status == 429:
                    code = RATE_LIMITED
                elif status >= 500:
                    code = SERVER_ERROR
                else:
                    code = HTTP_ERROR
                message = exc.body.get("message") if isinstance(exc.body, dict) else None
                failure = _Failure(f"HTTP {status}: {_text(message or exc.message)}", code)
            except openai.APITimeoutError:
                retryable = True
                failure = _Failure(f"no answer within {core.timeout:g} s", TIMEOUT)
            except openai.APIConnectionError as exc:
                retryable = True
                failure = _Failure(f"connection failed: {_text(exc)}", CONNECTION)
            except ValueError as exc:  # a 200 whose body is not a chat completion
                retryable = True
                failure = _Failure(f"unreadable response: {_text(exc)}", SERVER_ERROR)
            calls.append(
                self._call(
                    question,
                    request,
                    attempt=len(calls) + 1,
                    response=response,
                    latency_ms=(time.perf_counter() - started) * 1000,
                    error=failure.error,
                )
            )
            if not retryable or retry == core.max_retries:
                break
            delay = retry_after if retry_after is not None else core.backoff(retry)
            if delay > core.max_retry_after:
                failure.error += (
                    f" (Retry-After {delay:g} s is over the {core.max_retry_after:g} s limit)"
                )
                break
            time.sleep(delay)
        if attempts > 1:
            failure.error = f"{failure.error} (after {attempts} attempts)"
        return failure

    def _call(
        self,
        question: _Question,
        request: dict,
        *,
        attempt: int,
        response: dict | None = None,
        raw: str | None = None,
        latency_ms: float = 0.0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        error: str | None = None,
        cached: bool = False,
    ) -> JudgeCall:
        from evaluations.models import JudgeCall

        context = self._context
        return _new_call(
            {
                "model": question.model,
                "rubric_id": question.rubric_id,
                "rubric_version": question.rubric_version,
                "prompt_hash": (
                    question.prompt_hash
                    if request is question.request
                    else sha256(canonical_json(request["messages"]))
                ),
                "cache_key": question.cache_key,
                "cached": cached,
                "attempt": attempt,
                # The plain value, which the bulk INSERT passes through as it is.
                "status": (JudgeCall.Status.ERROR if error else JudgeCall.Status.OK).value,
                "error": error or "",
                "request": _stored_request(request, question.prepared),
                "response": response,
                "raw_answer": raw or "",
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "latency_ms": round(latency_ms, 3),
                "run_id": context.run_id,
                "trial_id": context.trial_id,
            }
        )

    def _record(self, calls: list) -> None:
        # A recorder failure (the database is down) propagates: losing the ledger silently
        # would be worse than failing the trial, which the engine retries.
        if self._core.recorder is not None and calls:
            self._core.recorder(calls, self._context)


_call_fields: tuple | None = None


def _new_call(values: dict) -> JudgeCall:
    """`JudgeCall(**values)` through Django's positional constructor (the one `from_db` uses),
    which costs a third of the keyword one: once per judge call. Fields not given get their
    defaults, as with keywords; an unknown name is a bug and raises."""
    global _call_fields
    from evaluations.models import JudgeCall

    if _call_fields is None:
        fields = [(f.attname, f.get_default) for f in JudgeCall._meta.concrete_fields]
        _call_fields = (fields, frozenset(name for name, _ in fields))
    fields, names = _call_fields
    if not names.issuperset(values):
        raise TypeError(f"JudgeCall has no field {sorted(set(values) - names)}")
    return JudgeCall(*[values[name] if name in values else default() for name, default in fields])


def _entry_of(answer: JudgeAnswer) -> CachedAnswer:
    return CachedAnswer(raw=answer.raw, source_call_id=answer.calls[-1].pk)


def _read_answer(payload: dict, prepared: _PreparedRubric):
    """(data, raw, problem, error code) of a chat completion; `problem` is None when usable."""
    try:
        choice = payload["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        return None, None, "the response has no message", MALFORMED
    refusal = message.get("refusal")
    if refusal:
        return None, refusal, f"the judge refused: {_text(refusal)}", REFUSED
    raw = message.get("content")
    if not raw or not isinstance(raw, str):
        return None, None, "the answer is empty", MALFORMED
    if choice.get("finish_reason") == "length":
        return None, raw, "the answer was cut off at the token limit", MALFORMED
    try:
        data = json.loads(raw)
    except ValueError as exc:
        return None, raw, f"the answer is not JSON ({exc})", MALFORMED
    if not isinstance(data, dict):
        return None, raw, "the answer is not a JSON object", MALFORMED
    quick_check = prepared.quick_check
    if quick_check is not None and quick_check(data):
        return data, raw, None, None
    error = best_match(prepared.validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "the top level"
        problem = f"the answer does not match the schema at {where}: {_text(error.message)}"
        return None, raw, problem, MALFORMED
    return data, raw, None, None


def _retry_after(headers) -> float | None:
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


def _text(value) -> str:
    text = str(value)
    return text if len(text) <= _MAX_ERROR_TEXT else text[: _MAX_ERROR_TEXT - 1] + "…"


def _jsonable(body):
    if body is None or isinstance(body, (dict, list, str, int, float, bool)):
        return body
    return str(body)


def _pk(value):
    return value if isinstance(value, int) or value is None else value.pk


# --- the default judge ----------------------------------------------------------------------

_defaults: dict[tuple, JudgeClient] = {}
_defaults_lock = threading.Lock()


def get_default_judge(**context) -> JudgeClient | None:
    """The judge configured in settings, bound to `context` (run, trial, agent, repetition).

    None when `SHERLOCK_JUDGE_BASE_URL` is empty: no judge is configured, and model checks are
    skipped (with that reason) rather than failed. One client per configuration per process,
    so its cache is shared by every trial this process scores.
    """
    base_url = settings.SHERLOCK_JUDGE_BASE_URL
    if not base_url:
        return None
    key = (
        os.getpid(),  # a forked worker builds its own (fresh locks, fresh cache)
        base_url,
        settings.OPENAI_API_KEY,
        settings.SHERLOCK_JUDGE_MODEL,
        settings.SHERLOCK_JUDGE_TIMEOUT,
        getattr(settings, "SHERLOCK_JUDGE_MAX_RETRIES", DEFAULT_MAX_RETRIES),
        getattr(settings, "SHERLOCK_JUDGE_MAX_BACKOFF", DEFAULT_MAX_BACKOFF),
        getattr(settings, "SHERLOCK_JUDGE_SEED", DEFAULT_SEED),
    )
    judge = _defaults.get(key)
    if judge is None:
        with _defaults_lock:
            judge = _defaults.get(key)
            if judge is None:
                judge = _defaults[key] = JudgeClient()
    return judge.bind(**context) if context else judge


def reset_default_judges() -> None:
    """Forget the default judges and their caches (tests: the database was rolled back)."""
    with _defaults_lock:
        _defaults.clear()
