"""The trial assembled from the steps: tool calls joined one per call, the conversation and
end user, the declared completion, the answer and the latency.
"""

from __future__ import annotations

import re
from typing import Any

from production.traces.values import json_value

DECLARED = "sherlock.declared_complete"


def joined_tool_calls(steps):  # noqa: C901
    """One call per call: each tool span is an executed call and each tool call a model's
    answer asked for a requested one, joined by call id, else by the span tree and the tool's
    name, so a call recorded by both is counted once. A request no span executed is kept with
    the result a later model call was given for it; calls are in the order they happened
    (docs/production.md, "One tool call per call")."""
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
                results[message.tool_call_id] = json_value(message.content)

    timed: list[Any] = []
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
        call["result"] = json_value(content) if isinstance(content, str) else content
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


def identity(root, spans, keys):
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


def declared_completion(root, spans):
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


def last_user(messages):
    users = [m for m in messages if m.role == "user"]
    return users[-1].content if users else None


def answer(messages):
    answers = [m for m in messages if m.role in ("assistant", "model", "") and m.content]
    return answers[-1].content if answers else None


def trace_latency(root, spans):
    if root is not None and root["end_unix_nano"] and root["start_unix_nano"]:
        return max(0.0, (root["end_unix_nano"] - root["start_unix_nano"]) / 1e6)
    starts = [s["start_unix_nano"] for s in spans if s["start_unix_nano"]]
    ends = [s["end_unix_nano"] for s in spans if s["end_unix_nano"]]
    if starts and ends:
        return max(0.0, (max(ends) - min(starts)) / 1e6)
    return None


def unique_spans(spans):
    """Spans sorted by start, one per span id (a span sent twice in a race is stored twice)."""
    seen, unique = set(), []
    for span in sorted(spans, key=lambda s: (s["start_unix_nano"], s["span_id"])):
        if span["span_id"] not in seen:
            seen.add(span["span_id"])
            unique.append(span)
    return unique
