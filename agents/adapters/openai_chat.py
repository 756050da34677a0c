"""`openai_chat`: a tool-using chat loop against any OpenAI-compatible endpoint.

The version's model, system prompt and tools go to the endpoint; every tool call the model asks
for is executed by a Python callable or an HTTP endpoint named in the config and its result
sent back, until the model answers without a tool call (or `max_turns` is reached). The
transcript records each call with its arguments and result.

A version's `denied_tools` are offered to the model like the others, so that reaching for one
is seen, but never executed: the model gets a refusal as the result and the call is recorded
`"denied": true` (an intentionally denied call is proof a boundary worked). Each answer's
`finish_reason` is kept, and `warnings` say what a person should know before trusting the
transcript (an answer cut off, tools a server showed it could not use). Config, each warning
and self-hosted servers: docs/adapters.md, "`openai_chat`", and docs/judges.md.

    {"base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini",
     "api_key": {"env": "SUPPORT_OPENAI_KEY"}, "system_prompt": "...", "temperature": 0,
     "max_tokens": 1024, "tool_choice": "auto", "max_turns": 8, "timeout": 60, "max_retries": 2,
     "tools": {"kb.search": {"callable": "pkg.tools.search"},
               "orders.lookup": {"url": "https://tools.internal/orders", "headers": {...}}}}
"""

import contextlib
import json
import os
import re
import threading
from typing import Any

import httpx2
import openai

from agents.adapters.base import (
    HEADERS,
    SECRET,
    AgentCallError,
    PreparedAgent,
    case_text,
    check_egress,
    resolve_headers,
    resolve_secret,
    secrets_of,
    validate_headers,
    validate_secret,
)
from agents.adapters.http_endpoint import DEFAULT_TIMEOUT, post_json
from sherlock.core.aio import in_thread, loop_client, tls_context
from sherlock.core.imports import import_allowed

_EXECUTOR = {
    "oneOf": [
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["callable"],
            "properties": {"callable": {"type": "string", "minLength": 1}},
        },
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["url"],
            "properties": {
                "url": {"type": "string", "pattern": "^https?://"},
                "headers": HEADERS,
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600},
            },
        },
    ]
}

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["base_url", "model"],
    "properties": {
        "base_url": {
            "type": "string",
            "pattern": "^https?://",
            "description": "The OpenAI-compatible endpoint, e.g. https://api.openai.com/v1.",
        },
        "model": {"type": "string", "minLength": 1, "description": "The model asked."},
        "api_key": SECRET,
        "system_prompt": {"type": "string", "description": "Sent first, as the system message."},
        "temperature": {"type": "number", "minimum": 0, "maximum": 2, "description": "0 to 2."},
        "seed": {"type": "integer", "description": "Asks the server for repeatable answers."},
        # Sent as `max_tokens`, the completion cap every OpenAI-compatible server reads.
        "max_tokens": {
            "type": "integer",
            "minimum": 1,
            "maximum": 1_000_000,
            "description": "The cap on each answer's tokens.",
        },
        # "auto" (the servers' default), "none", "required", or one tool by its Sherlock name.
        "tool_choice": {
            "oneOf": [
                {"enum": ["auto", "none", "required"]},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name"],
                    "properties": {"name": {"type": "string", "minLength": 1}},
                },
            ]
        },
        "max_turns": {
            "type": "integer",
            "minimum": 1,
            "maximum": 50,
            "description": "Requests per case before the loop stops (1 to 50, default 8).",
        },
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 3600,
            "description": "Seconds per request.",
        },
        "max_retries": {
            "type": "integer",
            "minimum": 0,
            "maximum": 10,
            "description": "The SDK's retries of a 429 or 5xx answer (0 to 10).",
        },
        "tools": {"type": "object", "additionalProperties": _EXECUTOR},
    },
}

DEFAULT_MAX_TURNS = 8
# The SDK follows redirects by default; the endpoint's host is the one SHERLOCK_AGENT_HOSTS
# allowed, not the host a redirect names (a 3xx is an agent error, its status in the reason).
NO_REDIRECTS = {"follow_redirects": False}
REFUSAL = (
    "Refused: the tool policy of this agent version denies {name!r}. The call was not "
    "executed; continue without it."
)


def validate(config, *, strict=False):
    """The rules a schema cannot say: the endpoint, its key and every HTTP tool executor go
    through SHERLOCK_AGENT_ENV and SHERLOCK_AGENT_HOSTS (`check_egress`); `strict` when the
    version is prepared for a run. Tool callables are imported by the caller (`prepare` keeps
    them)."""
    api_key = config.get("api_key")
    if api_key:
        validate_secret(api_key, "config.api_key")
    secrets = {"config.api_key": api_key["env"]} if api_key else {}
    check_egress("config.base_url", config["base_url"], secrets, strict=strict)
    for name, executor in (config.get("tools") or {}).items():
        where = f"config.tools.{name}"
        validate_headers(executor.get("headers"), f"{where}.headers")
        if "url" in executor:
            secrets = secrets_of(executor.get("headers"), f"{where}.headers")
            check_egress(f"{where}.url", executor["url"], secrets, strict=strict)
        elif not strict:
            try:
                import_allowed(executor["callable"], "SHERLOCK_AGENT_CALLABLES")
            except ValueError as exc:
                raise ValueError(f"{where}.callable: {exc}") from None


_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()


def sdk_client(base_url, api_key, timeout, max_retries):
    """One SDK client (one connection pool) per process and endpoint, shared by all threads."""
    key = (os.getpid(), base_url, api_key, timeout, max_retries)
    client = _clients.get(key)
    if client is None:
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = without_environment(
                    openai.OpenAI(
                        base_url=base_url,
                        api_key=api_key or "sk-none",  # many local servers need none; the SDK does
                        timeout=timeout,
                        max_retries=max_retries,
                    )
                )
    return client


def without_environment(client):
    """`client` with nothing the SDK read from the workers' environment: OPENAI_ORG_ID,
    OPENAI_PROJECT_ID (sent as `OpenAI-Organization`/`OpenAI-Project`), OPENAI_CUSTOM_HEADERS
    (sent as they are), OPENAI_ADMIN_KEY and OPENAI_WEBHOOK_SECRET. They are the operator's,
    for the judge (evaluations/judge reads them on purpose), and an agent's endpoint is one a
    Builder names: only what its config sends may leave (sherlock.core.egress). The base URL
    and the API key are always passed, so OPENAI_BASE_URL and OPENAI_API_KEY are never read.

    The SDK has no argument that turns these off (None means "read the environment"), so they
    are cleared once the client is built: `organization` and friends are its public
    attributes, read on every request; `_custom_headers` is where it keeps the parsed
    OPENAI_CUSTOM_HEADERS (no `default_headers` are passed, so it holds nothing else).
    tests/agents/test_egress_review2.py asserts that none of them is sent."""
    client.organization = client.project = None
    client.admin_api_key = client.webhook_secret = None
    client._custom_headers = {}
    client._ambient_authorizations = frozenset()
    return client


_WIRE_NAME = re.compile(r"[^a-zA-Z0-9_-]")

_template_caps = {}


def llama_template_caps(client, base_url):
    """llama.cpp's `chat_template_caps` from `GET /props` (the server root, not `/v1`), or {}
    when the server has none to give; asked once per process and server."""
    key = (os.getpid(), base_url)
    if key not in _template_caps:
        root = re.sub(r"/v1/?$", "", base_url.rstrip("/"))
        caps: dict[str, Any] = {}
        try:
            raw = client.get(f"{root}/props", cast_to=httpx2.Response, options=NO_REDIRECTS)
            caps = json.loads(raw.content).get("chat_template_caps") or {}
        except (openai.APIError, ValueError, AttributeError):
            pass  # not llama.cpp after all, or an older one: nothing it can tell us
        _template_caps[key] = caps if isinstance(caps, dict) else {}
    return _template_caps[key]


def _written_call(name):
    """A tool call written out as text: `"name": "kb_search"` (JSON) or `kb_search(` (code)."""
    quoted = re.escape(name)
    as_json = rf"""["']?name["']?\s*[:=]\s*["']?{quoted}(?![\w.-])"""
    return re.compile(rf"{as_json}|(?<![\w.]){quoted}\s*\(")


class OpenAIChatAgent(PreparedAgent):
    """The prepared chat loop: tools listed once per version, executors imported once."""

    def __init__(self, version):
        config = version.config
        validate(config, strict=True)  # today's rules: settings change, rows are written around
        self.config = config
        self.model = config["model"]
        self.max_turns = int(config.get("max_turns", DEFAULT_MAX_TURNS))
        self.timeout = float(config.get("timeout", 60))
        self.denied = {tool.name for tool in version.denied_tools.all()}
        offered = {tool.name: tool for tool in version.tools.all()}
        offered.update({tool.name: tool for tool in version.denied_tools.all()})
        # OpenAI function names allow [a-zA-Z0-9_-] only; Sherlock's tools are "kb.search".
        self.by_wire_name: dict[str, str] = {}
        self.tool_specs = []
        for name, tool in sorted(offered.items()):
            wire = _WIRE_NAME.sub("_", name)[:64]
            while wire in self.by_wire_name:
                wire = f"{wire[:60]}_{len(self.by_wire_name)}"
            self.by_wire_name[wire] = name
            parameters = tool.arguments_schema or {"type": "object", "properties": {}}
            self.tool_specs.append(
                {
                    "type": "function",
                    "function": {
                        "name": wire,
                        "description": tool.description or name,
                        "parameters": parameters,
                    },
                }
            )
        self.tool_choice = config.get("tool_choice")
        if isinstance(self.tool_choice, dict):
            chosen = {v: k for k, v in self.by_wire_name.items()}.get(self.tool_choice["name"])
            if chosen is None:
                raise AgentCallError(
                    f"config.tool_choice.name: {self.tool_choice['name']!r} is not a tool of "
                    "this version"
                )
            self.tool_choice = {"type": "function", "function": {"name": chosen}}
        self.executors = {}
        for name, executor in (config.get("tools") or {}).items():
            if "callable" in executor:
                try:
                    self.executors[name] = import_allowed(
                        executor["callable"], "SHERLOCK_AGENT_CALLABLES"
                    )
                except ValueError as exc:  # settings changed since the version was saved
                    raise AgentCallError(f"config.tools.{name}.callable: {exc}") from None
            else:
                self.executors[name] = executor

    def _client(self):
        return sdk_client(*self._client_key())

    def _async_client(self):
        """The loop's `openai.AsyncOpenAI` for this endpoint (`sherlock.core.aio.loop_client`).

        Its HTTP goes through aiohttp, the SDK's documented transport for many requests in
        flight (`openai.DefaultAioHttpClient`, as the judge's: evaluations/judge/sdk.py): with
        httpx's async pool, which probes every idle connection on each request, an agent call
        cost 3.6 to 4.1 ms of CPU at 128 in flight whose connections are idle four fifths of
        the time (the trial's checks run in between), 1.4 ms through aiohttp."""
        base_url, key, timeout, max_retries = self._client_key()
        return loop_client(
            ("openai_chat", base_url, key, timeout, max_retries),
            lambda: without_environment(
                openai.AsyncOpenAI(
                    base_url=base_url,
                    api_key=key or "sk-none",
                    timeout=timeout,
                    max_retries=max_retries,
                    http_client=openai.DefaultAioHttpClient(verify=tls_context()),
                )
            ),
        )

    def _client_key(self):
        api_key = self.config.get("api_key")
        key = resolve_secret(api_key, "config.api_key") if api_key else None
        return self.config["base_url"], key, self.timeout, int(self.config.get("max_retries", 2))

    def _call(self, case, repetition):
        client = self._client()
        steps, reply = self._conversation(case), None
        try:
            while True:
                reply = self._step(client, *steps.send(reply))
        except StopIteration as done:
            return done.value

    async def _acall(self, case, repetition):
        """The same conversation, its completions sent on the loop by `openai.AsyncOpenAI`;
        tool executors and llama.cpp's `/props` (blocking) run on the engine's pool."""
        client = self._async_client()
        steps, reply = self._conversation(case), None
        try:
            while True:
                step, argument = steps.send(reply)
                if step == "complete":
                    reply = await self._acomplete(client, argument)
                else:
                    reply = await in_thread(self._step, None, step, argument)
        except StopIteration as done:
            return done.value

    def _step(self, client, step, argument):
        if step == "complete":
            return self._complete(client, argument)
        if step == "template":
            return self._template_warnings(self._client(), argument)
        return self._run_tool(argument)

    def _conversation(self, case):  # noqa: C901
        """The chat loop, as a generator of its I/O steps: it yields `("complete", body)`,
        `("template", response)` or `("tool", call)` and is sent back the step's result, so
        that `_call` (blocking) and `_acall` (on the loop) run the very same conversation."""
        messages = []
        if self.config.get("system_prompt"):
            messages.append({"role": "system", "content": self.config["system_prompt"]})
        messages.append({"role": "user", "content": case_text(case)})
        request: dict[str, Any] = {"model": self.model}
        for name in ("temperature", "seed", "max_tokens"):
            if name in self.config:
                request[name] = self.config[name]
        if self.tool_specs:
            request["tools"] = self.tool_specs
            if self.tool_choice is not None:
                request["tool_choice"] = self.tool_choice
        tool_calls, usage, cost, turns = [], {"prompt_tokens": 0, "completion_tokens": 0}, None, 0
        transcript: dict[str, Any] = {"model": self.model, "finish_reasons": [], "warnings": []}
        while True:
            turns += 1
            response = yield "complete", {**request, "messages": messages}
            reported = response.get("usage") or {}
            usage["prompt_tokens"] += reported.get("prompt_tokens") or 0
            usage["completion_tokens"] += reported.get("completion_tokens") or 0
            # Some gateways (OpenRouter, LiteLLM) report what the call was billed.
            if isinstance(reported.get("cost"), (int, float)):
                cost = (cost or 0) + reported["cost"]
            try:
                choice = response["choices"][0]
                message = choice["message"]
            except (KeyError, IndexError, TypeError):
                raise AgentCallError(f"{self.model}: the response has no message") from None
            transcript["finish_reasons"].append(choice.get("finish_reason"))
            transcript["warnings"] += self._warnings(turns, choice, message)
            if turns == 1 and self._expects_tools() and not message.get("tool_calls"):
                transcript["warnings"] += yield "template", response
            if not message.get("tool_calls"):
                transcript["output"] = message.get("content")
                transcript["finish_reason"] = choice.get("finish_reason")
                break
            messages.append({k: v for k, v in message.items() if v is not None})
            for call in message["tool_calls"]:
                record = yield "tool", call
                tool_calls.append(record)
                result = record["result"]
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.get("id"),
                        "content": result if isinstance(result, str) else json.dumps(result),
                    }
                )
            if turns >= self.max_turns:
                transcript["output"] = message.get("content")
                transcript["stopped"] = f"max_turns ({self.max_turns}) reached"
                break
        transcript.update(tool_calls=tool_calls, usage=usage, turns=turns)
        if cost is not None:
            transcript["cost_usd"] = cost
        return transcript

    def _expects_tools(self):
        return bool(self.tool_specs) and self.config.get("tool_choice") != "none"

    def _warnings(self, turn, choice, message):
        """What this answer says about the server, in words a person reads on the trial page.

        Only what the reply shows: a model that simply chose not to call a tool gets no
        warning, but a `tool_calls` finish without calls, a call written out as text naming an
        offered tool, or `tool_choice: "required"` answered without one are the marks of a
        server (or chat template) that cannot pass tools through.
        """
        warnings = []
        finish = choice.get("finish_reason")
        if finish == "length":
            cap = self.config.get("max_tokens")
            warnings.append(
                f"answer {turn} was cut off at the token limit (finish_reason length"
                + (f", max_tokens {cap})" if cap else ", the server's own cap)")
            )
        if not self._expects_tools() or message.get("tool_calls"):
            return warnings
        if finish == "tool_calls":
            warnings.append(
                f"answer {turn}: the server reported finish_reason tool_calls but sent no tool "
                "calls; it may not support tools for this model"
            )
        content = message.get("content")
        if isinstance(content, str):
            written = sorted(
                name
                for wire, name in self.by_wire_name.items()
                if any(_written_call(spelling).search(content) for spelling in {wire, name})
            )
            if written:
                warnings.append(
                    f"answer {turn}: tools were offered but the server returned no tool calls; "
                    f"the answer writes a call to {', '.join(written)} as text, so the server "
                    "(or its chat template) does not pass tool calls through"
                )
        if self.config.get("tool_choice") == "required":
            warnings.append(
                f"answer {turn}: tool_choice is required but the server answered without a "
                "tool call; it ignores tool_choice or cannot use tools"
            )
        return warnings

    def _template_warnings(self, client, response):
        """llama.cpp drops the tools without a word when the model's chat template has none:
        the reply looks like any other. The server does say so, in `GET /props`
        (`chat_template_caps.supports_tool_calls`), so when a reply carries llama.cpp's
        `timings` and no tool call, ask it (once per process and server)."""
        if "timings" not in response:
            return []
        caps = llama_template_caps(client, self.config["base_url"])
        if caps.get("supports_tool_calls") is not False:
            return []
        return [
            "tools were offered but the server reports that its chat template cannot call "
            "tools (llama.cpp /props: supports_tool_calls false), so the model was never shown "
            "them: use a model whose template has tools, or a --chat-template that does"
        ]

    def _complete(self, client, body):
        """One chat completion, as the JSON dict the endpoint sent.

        The SDK's documented low-level `post` rather than `chat.completions.create`: the same
        client, pool, auth, retries, timeouts and errors, without building typed models that
        we would turn straight back into dicts (a few ms of CPU per call, in a worker that
        makes thousands). The judge client does the same (evaluations/judge/sdk.py).
        """
        with self._failures(body):
            raw = client.post(
                "/chat/completions", body=body, cast_to=httpx2.Response, options=NO_REDIRECTS
            )
        return self._response(raw)

    async def _acomplete(self, client, body):
        """`_complete` through the loop's AsyncOpenAI client."""
        with self._failures(body):
            raw = await client.post(
                "/chat/completions", body=body, cast_to=httpx2.Response, options=NO_REDIRECTS
            )
        return self._response(raw)

    @contextlib.contextmanager
    def _failures(self, body):
        try:
            yield
        except openai.APIStatusError as exc:
            where = f"{self.model} at {self.config['base_url']}"
            if body.get("tools") and "tool" in str(exc).lower():
                raise AgentCallError(
                    f"{where} cannot use the tools offered (the server refused them: {exc})"
                ) from exc
            raise AgentCallError(f"{where}: {exc}") from exc
        except openai.APIError as exc:
            raise AgentCallError(f"{self.model} at {self.config['base_url']}: {exc}") from exc

    def _response(self, raw):
        try:
            response = json.loads(raw.content)
        except ValueError as exc:
            raise AgentCallError(f"{self.model}: the response is not JSON: {exc}") from exc
        if not isinstance(response, dict):
            raise AgentCallError(f"{self.model}: the response is not a JSON object")
        return response

    def _run_tool(self, call):
        function = call.get("function") or {}
        name = function.get("name")
        if isinstance(name, str):  # a hostile name (a list, say) is kept as sent, not looked up
            name = self.by_wire_name.get(name, name)
        record = {
            "id": call.get("id"),
            "name": name,
            "arguments": function.get("arguments"),
            "denied": False,
        }
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError as exc:
            return {**record, "result": {"error": f"arguments are not JSON: {exc}"}, "error": True}
        record["arguments"] = arguments
        if name in self.denied:
            return {**record, "result": REFUSAL.format(name=name), "denied": True}
        executor = self.executors.get(name)
        if executor is None:
            known = "offered" if name in self.by_wire_name.values() else "unknown"
            error = f"no executor configured for the {known} tool {name!r}"
            return {**record, "result": {"error": error}, "error": True}
        try:
            if callable(executor):
                result = executor(arguments)
            else:
                headers = resolve_headers(executor.get("headers"), f"config.tools.{name}.headers")
                result = post_json(
                    executor["url"],
                    arguments,
                    headers=headers,
                    timeout=float(executor.get("timeout", DEFAULT_TIMEOUT)),
                    what=f"tool {name}",
                )
        except Exception as exc:  # a failing tool is the model's problem to handle, not ours
            return {**record, "result": {"error": f"{type(exc).__name__}: {exc}"}, "error": True}
        return {**record, "result": result}
