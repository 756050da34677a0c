"""One production trial from a trace's spans, whatever conventions wrote them (the matrix in
docs/production.md, "What is read from which attribute").

Three dialects are read, each span on its own, so a trace whose agent framework writes
OpenInference and whose model client writes GenAI spans still makes one trial:

- the GenAI semantic conventions from 1.37 (`gen_ai.input.messages`, `gen_ai.output.messages`
  and `gen_ai.system_instructions` as JSON parts, `gen_ai.provider.name`, `execute_tool` spans
  with `gen_ai.tool.name`, `gen_ai.tool.call.id`, `.arguments`, `.result`, `gen_ai.usage.*`,
  `retrieval` spans with `gen_ai.retrieval.documents`);
- the GenAI conventions up to 1.36 (`gen_ai.system`, `gen_ai.prompt`/`gen_ai.completion` as
  JSON or text, the indexed `gen_ai.prompt.N.*`/`gen_ai.completion.N.*` OpenLLMetry writes,
  the per-message span events `gen_ai.user.message`, `gen_ai.choice`, ...);
- OpenInference (`openinference.span.kind` LLM, TOOL, RETRIEVER, CHAIN, AGENT, `input.value`,
  `output.value`, the indexed `llm.input_messages.N.message.*`, `llm.token_count.*`,
  `tool.name`, `retrieval.documents.N.document.content`).

Each span becomes a `Step` (a model call, a tool call, a retrieval, or an agent/chain step with
an input and an output); the trial is assembled from the steps: the input and output of the
root step when it has them, else the first model call's last user message and the last model
call's answer; tool calls from tool spans, and the calls a model asked for that no tool span
recorded, each with the result a later model call was given for it; contexts from retrieval
spans; tokens summed over model calls; latency from the root span. `NORMALIZER_VERSION` is
stored on each trace: a change of what is read bumps it, so a trial says which reading made it.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

# 2: GenAI retrieval spans (gen_ai.retrieval.documents) give contexts; 3: one tool call per
# call (requests joined to tool spans), and `sherlock.declared_complete`.
NORMALIZER_VERSION = 3
DECLARED = "sherlock.declared_complete"

GENAI, GENAI_LEGACY, OPENINFERENCE = "genai", "genai_legacy", "openinference"

# Attributes only one dialect writes (a span with none of them says nothing about its dialect).
_GENAI_MARKS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.provider.name",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.retrieval.documents",
    "gen_ai.retrieval.query.text",
)
_LEGACY_EVENTS = (
    "gen_ai.system.message",
    "gen_ai.user.message",
    "gen_ai.assistant.message",
    "gen_ai.tool.message",
    "gen_ai.choice",
    "gen_ai.content.prompt",
    "gen_ai.content.completion",
)
_MODEL_OPERATIONS = ("chat", "text_completion", "generate_content", "completion")
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"


@dataclass
class Message:
    role: str = ""
    content: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    tool_call_id: str | None = None


@dataclass
class Step:
    """What one span says, in the dialect's own terms read into one shape."""

    kind: str = ""  # llm, tool, retrieval, agent ("" when the span is none of these)
    dialect: str | None = None
    system: str = ""
    input_messages: list[Message] = field(default_factory=list)
    output_messages: list[Message] = field(default_factory=list)
    input_value: Any = None
    output_value: Any = None
    tool: dict | None = None
    documents: list[str] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str = ""
    cost: float | None = None


@dataclass
class Normalized:
    dialect: str
    transcript: dict
    input_text: str
    output_text: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float | None
    model: str
    has_error: bool
    session: str = ""
    end_user: str = ""


def normalize(spans, trace_id=""):
    """The trial of `spans` (dicts with the `production.Span` fields), as `Normalized`."""
    spans = _unique(spans)
    ids = {s["span_id"] for s in spans}
    steps = [(span, read_span(span)) for span in spans]
    dialects = {step.dialect for _, step in steps if step.dialect}
    if any(step.kind for _, step in steps) and not dialects:
        dialects = {GENAI}  # only attributes both GenAI versions share (gen_ai.operation.name)
    dialect = dialects.pop() if len(dialects) == 1 else ("mixed" if dialects else "unknown")
    roots = [s for s in spans if not s["parent_span_id"] or s["parent_span_id"] not in ids]
    root = roots[0] if roots else None
    root_step = next((step for span, step in steps if span is root), Step())
    llm = [step for _, step in steps if step.kind == "llm"]

    input_value = _first_present(
        root_step.input_value if root_step.kind != "llm" else None,
        _last_user(root_step.input_messages) if root_step.kind == "agent" else None,
        _last_user(llm[0].input_messages) if llm else None,
        llm[0].input_value if llm else None,
    )
    output_value = _first_present(
        root_step.output_value if root_step.kind != "llm" else None,
        _answer(root_step.output_messages) if root_step.kind == "agent" else None,
        _answer(llm[-1].output_messages) if llm else None,
        llm[-1].output_value if llm else None,
    )
    transcript = {
        "input": "" if input_value is None else input_value,
        "output": output_value,
        "tool_calls": _tool_calls(steps),
        "contexts": [doc for _, step in steps for doc in step.documents],
    }
    input_tokens = _sum(step.input_tokens for step in llm)
    output_tokens = _sum(step.output_tokens for step in llm)
    if input_tokens is not None or output_tokens is not None:
        transcript["usage"] = {
            "prompt_tokens": input_tokens or 0,
            "completion_tokens": output_tokens or 0,
        }
    costs = [step.cost for step in llm]
    if llm and all(cost is not None for cost in costs):
        transcript["cost_usd"] = sum(costs)
    model = next((step.model for step in reversed(llm) if step.model), "")
    if model:
        transcript["model"] = model
    latency = _latency(root, spans)
    if latency is not None:
        transcript["latency_ms"] = latency
    declared = _declared(root, spans)
    if declared is not None:
        transcript["declared_complete"] = declared
    if root is not None and root["status_code"] == 2:
        transcript["error"] = root["status_message"] or f"span {root['name']!r} ended in error"
    transcript["trace"] = {
        "trace_id": trace_id,
        "dialect": dialect,
        "normalizer_version": NORMALIZER_VERSION,
        "spans": len(spans),
    }
    return Normalized(
        dialect=dialect,
        transcript=transcript,
        input_text=_text(transcript["input"]),
        output_text=_text(output_value),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        latency_ms=latency,
        model=model[:200],
        has_error=any(s["status_code"] == 2 for s in spans),
        session=_identity(root, spans, SESSION_KEYS),
        end_user=_identity(root, spans, USER_KEYS),
    )


# --- one span ----------------------------------------------------------------------------------


def read_span(span):
    """The Step one span makes, in whichever dialect its attributes are written."""
    attrs = span.get("attributes") or {}
    events = span.get("events") or []
    if "openinference.span.kind" in attrs:
        return _openinference(attrs)
    if any(k in attrs for k in _GENAI_MARKS):
        return _genai(span, attrs, events, GENAI)
    legacy = (
        "gen_ai.system" in attrs
        or any(k.startswith(("gen_ai.prompt", "gen_ai.completion")) for k in attrs)
        or any(e.get("name") in _LEGACY_EVENTS for e in events)
        or "traceloop.span.kind" in attrs
    )
    if legacy:
        return _genai(span, attrs, events, GENAI_LEGACY)
    if _DETAILS_EVENT in {e.get("name") for e in events}:
        return _genai(span, attrs, events, GENAI)
    if "gen_ai.operation.name" in attrs or "gen_ai.tool.name" in attrs:
        return _genai(span, attrs, events, None)
    return Step()


def _genai(span, attrs, events, dialect):
    """Both GenAI versions: they share the operation, model, usage and tool attributes; 1.37
    moved the messages to `gen_ai.*.messages` parts, before them the prompt and completion
    were attributes (JSON, text or indexed) or one span event per message."""
    step = Step(dialect=dialect)
    details = next(
        (e.get("attributes") or {} for e in events if e.get("name") == _DETAILS_EVENT), {}
    )
    merged = {**details, **attrs}
    operation = str(merged.get("gen_ai.operation.name") or "")
    name = span.get("name") or ""
    step.model = str(
        merged.get("gen_ai.response.model") or merged.get("gen_ai.request.model") or ""
    )
    step.input_tokens = _int(
        _first_present(
            merged.get("gen_ai.usage.input_tokens"), merged.get("gen_ai.usage.prompt_tokens")
        )
    )
    step.output_tokens = _int(
        _first_present(
            merged.get("gen_ai.usage.output_tokens"), merged.get("gen_ai.usage.completion_tokens")
        )
    )
    if (
        operation == "execute_tool"
        or name.startswith("execute_tool")
        or (merged.get("traceloop.span.kind") == "tool")
    ):
        step.kind = "tool"
        step.tool = {
            "id": merged.get("gen_ai.tool.call.id"),
            "name": merged.get("gen_ai.tool.name")
            or merged.get("traceloop.entity.name")
            or name.removeprefix("execute_tool").strip(),
            "arguments": _json(
                _first_present(
                    merged.get("gen_ai.tool.call.arguments"), merged.get("traceloop.entity.input")
                )
            ),
            "result": _json(
                _first_present(
                    merged.get("gen_ai.tool.call.result"), merged.get("traceloop.entity.output")
                )
            ),
        }
        return step
    has_messages = any(key in merged for key in ("gen_ai.input.messages", "gen_ai.output.messages"))
    if operation == "retrieval" or (
        not operation and "gen_ai.retrieval.documents" in merged and not has_messages
    ):
        step.kind = "retrieval"
        step.input_value = _json(merged.get("gen_ai.retrieval.query.text"))
        step.documents = _retrieved(_json(merged.get("gen_ai.retrieval.documents")))
        return step
    # Messages: 1.37's parts first, then the older forms.
    step.system = _parts_text(_json(merged.get("gen_ai.system_instructions")))
    step.input_messages = _parts_messages(_json(merged.get("gen_ai.input.messages")))
    step.output_messages = _parts_messages(_json(merged.get("gen_ai.output.messages")))
    if not step.input_messages:
        step.input_messages = (
            _openai_messages(_json(merged.get("gen_ai.prompt")))
            or _indexed_messages(merged, "gen_ai.prompt", "")
            or _event_messages(events, input_side=True)
        )
    if not step.output_messages:
        step.output_messages = (
            _openai_messages(_json(merged.get("gen_ai.completion")), default_role="assistant")
            or _indexed_messages(merged, "gen_ai.completion", "")
            or _event_messages(events, input_side=False)
        )
    if operation == "invoke_agent" or name.startswith("invoke_agent"):
        step.kind = "agent"
    elif (
        operation in _MODEL_OPERATIONS
        or step.input_messages
        or step.output_messages
        or "gen_ai.system" in merged
        or "gen_ai.provider.name" in merged
    ):
        step.kind = "llm"
    if step.kind == "agent" and not (step.input_messages or step.output_messages):
        step.input_value = _json(merged.get("traceloop.entity.input"))
        step.output_value = _json(merged.get("traceloop.entity.output"))
    return step


def _openinference(attrs):
    kind = str(attrs.get("openinference.span.kind", "")).upper()
    step = Step(dialect=OPENINFERENCE)
    step.input_value = _json(attrs.get("input.value"))
    step.output_value = _json(attrs.get("output.value"))
    if kind == "LLM":
        step.kind = "llm"
        step.input_messages = _indexed_messages(attrs, "llm.input_messages", "message.")
        step.output_messages = _indexed_messages(attrs, "llm.output_messages", "message.")
        step.system = "\n".join(m.content for m in step.input_messages if m.role == "system")
        step.model = str(attrs.get("llm.model_name") or "")
        step.input_tokens = _int(attrs.get("llm.token_count.prompt"))
        step.output_tokens = _int(attrs.get("llm.token_count.completion"))
        cost = attrs.get("llm.cost.total")
        step.cost = float(cost) if isinstance(cost, int | float) else None
    elif kind == "TOOL":
        step.kind = "tool"
        arguments = step.input_value
        if arguments is None:
            arguments = _json(attrs.get("tool.parameters"))
        step.tool = {
            "id": attrs.get("tool_call.id"),
            "name": attrs.get("tool.name") or attrs.get("tool_call.function.name") or "tool",
            "arguments": arguments,
            "result": step.output_value,
        }
    elif kind == "RETRIEVER":
        step.kind = "retrieval"
        for document in _indexed(attrs, "retrieval.documents"):
            content = document.get("document.content")
            if content is not None:
                step.documents.append(_text(content))
    elif kind in ("AGENT", "CHAIN"):
        step.kind = "agent"
    return step


def _retrieved(documents):
    """The texts of `gen_ai.retrieval.documents` (a JSON list of `{id, score, content, ...}`);
    a document recorded without its content (ids and scores only, the conventions' minimum)
    is no context a check can read, so it is left out rather than made an empty string."""
    if not isinstance(documents, list):
        return []
    texts = []
    for document in documents:
        content = document.get("content") if isinstance(document, dict) else document
        if content is not None and not isinstance(content, dict | list):
            texts.append(_text(content))
    return texts


# --- messages in each dialect's shape -----------------------------------------------------------


def _parts_messages(value):
    """1.37's `[{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", "id",
    "name", "arguments"}, {"type": "tool_call_response", "id", "response"}]}]`."""
    if not isinstance(value, list):
        return []
    messages = []
    for item in value:
        if not isinstance(item, dict):
            continue
        message = Message(role=str(item.get("role") or ""))
        texts = []
        for part in item.get("parts") or []:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                texts.append(_text(part.get("content")))
            elif kind == "tool_call":
                message.tool_calls.append(
                    {
                        "id": part.get("id"),
                        "name": part.get("name"),
                        "arguments": _json(part.get("arguments")),
                    }
                )
            elif kind == "tool_call_response":
                message.tool_call_id = part.get("id")
                texts.append(_text(_first_present(part.get("response"), part.get("result"))))
        message.content = "\n".join(t for t in texts if t)
        messages.append(message)
    return messages


def _parts_text(value):
    if isinstance(value, list):
        return "\n".join(
            _text(p.get("content")) for p in value if isinstance(p, dict) and p.get("content")
        )
    return _text(value) if value else ""


def _openai_messages(value, default_role="user"):
    """`gen_ai.prompt`/`gen_ai.completion` as they were written before 1.37: OpenAI's message
    list as JSON, or plain text."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [Message(role=default_role, content=value)]
    if isinstance(value, dict):
        value = value.get("messages") or value.get("choices") or [value]
    messages = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict) and isinstance(item.get("message"), dict):
            item = item["message"]  # a choice
        if not isinstance(item, dict):
            continue
        messages.append(
            Message(
                role=str(item.get("role") or default_role),
                content=_text(item.get("content")),
                tool_calls=[
                    _openai_call(c) for c in item.get("tool_calls") or [] if isinstance(c, dict)
                ],
                tool_call_id=item.get("tool_call_id"),
            )
        )
    return messages


def _openai_call(call):
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    return {
        "id": call.get("id"),
        "name": call.get("name") or function.get("name"),
        "arguments": _json(_first_present(call.get("arguments"), function.get("arguments"))),
    }


def _indexed_messages(attrs, prefix, inner):
    """`<prefix>.N.<inner>role`, `.content`, `.tool_call_id`, `.tool_calls.M.*` (OpenLLMetry's
    `gen_ai.prompt.0.role`; OpenInference's `llm.input_messages.0.message.role`, with
    `tool_calls.M.tool_call.function.name` and `contents.M.message_content.text`)."""
    messages = []
    for item in _indexed(attrs, prefix):
        texts = [item.get(f"{inner}content")]
        texts += [
            v
            for k, v in sorted(item.items())
            if k.startswith(f"{inner}contents.") and k.endswith(".text")
        ]
        calls = {}
        for key, value in item.items():
            head = f"{inner}tool_calls."
            if not key.startswith(head):
                continue
            index, _, rest = key[len(head) :].partition(".")
            rest = rest.removeprefix("tool_call.").removeprefix("function.")
            calls.setdefault(index, {})[rest] = value
        messages.append(
            Message(
                role=str(item.get(f"{inner}role") or ""),
                content="\n".join(_text(t) for t in texts if t not in (None, "")),
                tool_calls=[
                    {
                        "id": c.get("id"),
                        "name": c.get("name"),
                        "arguments": _json(c.get("arguments")),
                    }
                    for _, c in sorted(calls.items(), key=lambda kv: _index(kv[0]))
                ],
                tool_call_id=item.get(f"{inner}tool_call_id"),
            )
        )
    return [m for m in messages if m.role or m.content or m.tool_calls]


def _event_messages(events, input_side):
    """The per-message span events of the conventions before 1.37."""
    messages = []
    for event in events:
        name = event.get("name")
        attrs = event.get("attributes") or {}
        if input_side and name in (
            "gen_ai.system.message",
            "gen_ai.user.message",
            "gen_ai.assistant.message",
            "gen_ai.tool.message",
        ):
            role = attrs.get("role") or name.split(".")[1]
            messages.append(
                Message(
                    role=str(role),
                    content=_text(_json(attrs.get("content"))),
                    tool_calls=[_openai_call(c) for c in _list(_json(attrs.get("tool_calls")))],
                    tool_call_id=attrs.get("id"),
                )
            )
        elif input_side and name == "gen_ai.content.prompt":
            messages += _openai_messages(_json(attrs.get("gen_ai.prompt")))
        elif not input_side and name == "gen_ai.choice":
            message = _json(attrs.get("message"))
            message = message if isinstance(message, dict) else {}
            content = _first_present(message.get("content"), _json(attrs.get("content")))
            calls = _first_present(message.get("tool_calls"), _json(attrs.get("tool_calls")))
            messages.append(
                Message(
                    role=str(message.get("role") or "assistant"),
                    content=_text(content),
                    tool_calls=[_openai_call(c) for c in _list(calls)],
                )
            )
        elif not input_side and name == "gen_ai.content.completion":
            messages += _openai_messages(_json(attrs.get("gen_ai.completion")), "assistant")
    return messages


# --- the trial ---------------------------------------------------------------------------------


def _tool_calls(steps):
    """One call per call (docs/production.md, "One tool call per call"): each tool span is an
    executed call, each tool call a model's answer asked for is a requested one, and the two
    are joined, so a call recorded by both is counted once:

    1. by call id, when the tool span has one (`gen_ai.tool.call.id`, `tool_call.id`, or the id
       a framework's result wrapper carries);
    2. else by the span tree and the tool's name: the earliest request not joined yet, made by
       a model span that started before the tool span, whose tool name is the same once case
       and punctuation are set aside (`refunds.create` is `refunds_create`, the name a model's
       function must take); a request from a sibling of the tool span comes first.

    A joined call takes the executed span's name and result, and the span's arguments when
    they are an object (else the request's). A request no tool span executed is kept, with the
    result a later model call was given for it. Calls are in the order they happened: an
    executed call at its span's start, a request at its model span's."""
    requests = []
    for span, step in steps:
        if step.kind != "llm":
            continue
        for message in step.output_messages:
            for call in message.tool_calls:
                if call.get("name"):
                    requests.append({"span": span, "call": call, "joined": False})
    results = {}
    for _, step in steps:
        for message in step.input_messages:
            if message.role == "tool" and message.tool_call_id:
                results[message.tool_call_id] = _json(message.content)

    timed = []
    for span, step in steps:
        if step.kind != "tool" or not step.tool:
            continue
        executed = _executed(step.tool)
        request = _join(executed, span, requests)
        call = {
            "id": executed["id"],
            "name": executed["name"],
            "arguments": executed["arguments"],
            "result": executed["result"],
        }
        if request is not None:
            asked = request["call"]
            call["id"] = call["id"] or asked.get("id")
            if not isinstance(call["arguments"], dict) and asked.get("arguments") is not None:
                call["arguments"] = asked.get("arguments")
            if call["result"] is None and asked.get("id") in results:
                call["result"] = results[asked.get("id")]
        timed.append((span["start_unix_nano"], len(timed), call))
    for request in requests:
        if request["joined"]:
            continue
        asked = request["call"]
        call = {**asked, "result": results.get(asked.get("id"))}
        timed.append((request["span"]["start_unix_nano"], len(timed), call))
    timed.sort(key=lambda item: item[:2])
    return [
        {k: v for k, v in call.items() if v is not None or k == "arguments"} for *_, call in timed
    ]


def _executed(tool):
    """A tool span's call, its result unwrapped from a framework's wrapper (LangChain's
    serialised `ToolMessage`: the content is the result, its `tool_call_id` the call's id) and
    its arguments from a decorator's `{"args": [], "kwargs": {...}}`."""
    call = {
        "id": tool.get("id") or None,
        "name": str(tool.get("name") or "tool"),
        "arguments": tool.get("arguments"),
        "result": tool.get("result"),
    }
    wrapped = _tool_message(call["result"])
    if wrapped is not None:
        content, call_id = wrapped
        call["result"] = _json(content) if isinstance(content, str) else content
        call["id"] = call["id"] or call_id
    arguments = call["arguments"]
    decorated = isinstance(arguments, dict) and set(arguments) == {"args", "kwargs"}
    if decorated and not arguments["args"] and isinstance(arguments["kwargs"], dict):
        call["arguments"] = arguments["kwargs"]
    return call


def _tool_message(value):
    """(content, tool call id) of a serialised LangChain `ToolMessage`, or None: as
    `{"type": "tool", "data": {...}}` (`messages_to_dict`) or as a constructor
    (`{"lc": 1, "type": "constructor", "id": [..., "ToolMessage"], "kwargs": {...}}`)."""
    if not isinstance(value, dict):
        return None
    if value.get("type") == "tool" and isinstance(value.get("data"), dict):
        data = value["data"]
    elif (
        value.get("type") == "constructor"
        and isinstance(value.get("id"), list)
        and value["id"][-1:] == ["ToolMessage"]
        and isinstance(value.get("kwargs"), dict)
    ):
        data = value["kwargs"]
    else:
        return None
    if "content" not in data:
        return None
    call_id = data.get("tool_call_id")
    return data["content"], call_id if isinstance(call_id, str) and call_id else None


def _join(executed, span, requests):
    """The request `executed` (a tool span's call) answers, marked joined; None if none."""
    if executed["id"]:
        for request in requests:
            if not request["joined"] and request["call"].get("id") == executed["id"]:
                request["joined"] = True
                return request
        return None
    name = folded_name(executed["name"])
    candidates = [
        request
        for request in requests
        if not request["joined"]
        and folded_name(request["call"].get("name")) == name
        and request["span"]["start_unix_nano"] <= span["start_unix_nano"]
    ]
    if not candidates:
        return None
    parent = span["parent_span_id"]
    candidates.sort(key=lambda r: r["span"]["parent_span_id"] != parent)  # stable: siblings first
    candidates[0]["joined"] = True
    return candidates[0]


def folded_name(name):
    """A tool name with case and punctuation set aside (`refunds.create` is `refunds_create`)."""
    return re.sub(r"[^0-9a-z]+", "_", str(name or "").lower()).strip("_")


# The standard attributes that name a trace's conversation and its end user: OpenTelemetry's
# `session.id` and `user.id` (OpenInference writes the same), the GenAI conventions'
# `gen_ai.conversation.id`, and the older `enduser.id`.
SESSION_KEYS = ("session.id", "gen_ai.conversation.id")
USER_KEYS = ("user.id", "enduser.id")


def _identity(root, spans, keys):
    """The first of `keys` a span carries as text or a number, the root span's first, then the
    others in start order; "" when none does. At most 200 characters."""
    ordered = ([root] if root is not None else []) + [s for s in spans if s is not root]
    for span in ordered:
        attributes = span.get("attributes") or {}
        for key in keys:
            value = attributes.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                return str(value)[:200]
    return ""


def _declared(root, spans):
    """The trial's declared completion from `sherlock.declared_complete` (a boolean, or the
    text "true"/"false"): the root span's when it has one, else the last span to end that has
    one; None when no span says."""

    def read(span):
        value = (span.get("attributes") or {}).get(DECLARED)
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        return value if isinstance(value, bool) else None

    if root is not None and read(root) is not None:
        return read(root)
    saying = [s for s in spans if read(s) is not None]
    return read(max(saying, key=lambda s: s["end_unix_nano"])) if saying else None


def _last_user(messages):
    users = [m for m in messages if m.role == "user"]
    return users[-1].content if users else None


def _answer(messages):
    answers = [m for m in messages if m.role in ("assistant", "model", "") and m.content]
    return answers[-1].content if answers else None


def _latency(root, spans):
    if root is not None and root["end_unix_nano"] and root["start_unix_nano"]:
        return max(0.0, (root["end_unix_nano"] - root["start_unix_nano"]) / 1e6)
    starts = [s["start_unix_nano"] for s in spans if s["start_unix_nano"]]
    ends = [s["end_unix_nano"] for s in spans if s["end_unix_nano"]]
    if starts and ends:
        return max(0.0, (max(ends) - min(starts)) / 1e6)
    return None


def _unique(spans):
    """Spans sorted by start, one per span id (a span sent twice in a race is stored twice)."""
    seen, unique = set(), []
    for span in sorted(spans, key=lambda s: (s["start_unix_nano"], s["span_id"])):
        if span["span_id"] not in seen:
            seen.add(span["span_id"])
            unique.append(span)
    return unique


# --- values ------------------------------------------------------------------------------------


def _indexed(attrs, prefix):
    """`prefix.N.rest` attributes as a list of `{rest: value}`, by N."""
    head = prefix + "."
    groups = {}
    for key, value in attrs.items():
        if key.startswith(head):
            index, _, rest = key[len(head) :].partition(".")
            if rest and index.isdigit():
                groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


def _index(text):
    return int(text) if text.isdigit() else 0


def _json(value):
    """A JSON document written as a string (attributes are strings) parsed, else as is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        with contextlib.suppress(ValueError, RecursionError):
            return json.loads(value)
    return value


def _list(value):
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _text(value):
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 2**31 else None
    if isinstance(value, float) and value.is_integer():
        return _int(int(value))
    if isinstance(value, str) and value.isdigit():
        return _int(int(value))
    return None


def _sum(values):
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _first_present(*values):
    return next((v for v in values if v is not None and v != ""), None)
