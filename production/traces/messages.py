"""Messages in each dialect's shape: GenAI parts (1.37 and later), OpenAI's message list and
the indexed attributes (1.36 and earlier, OpenLLMetry, OpenInference), and span events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from production.traces.values import (
    as_text,
    first_present,
    index_of,
    indexed_attributes,
    json_value,
    object_list,
)
from sherlock.core.transcripts import read_call


@dataclass
class Message:
    role: str = ""
    content: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    tool_call_id: str | None = None


def parts_messages(value):
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
                texts.append(as_text(part.get("content")))
            elif kind == "tool_call":
                message.tool_calls.append(
                    {
                        "id": part.get("id"),
                        "name": part.get("name"),
                        "arguments": json_value(part.get("arguments")),
                    }
                )
            elif kind == "tool_call_response":
                message.tool_call_id = part.get("id")
                texts.append(as_text(first_present(part.get("response"), part.get("result"))))
        message.content = "\n".join(t for t in texts if t)
        messages.append(message)
    return messages


def parts_text(value):
    if isinstance(value, list):
        return "\n".join(
            as_text(p.get("content")) for p in value if isinstance(p, dict) and p.get("content")
        )
    return as_text(value) if value else ""


def openai_messages(value, default_role="user"):
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
                content=as_text(item.get("content")),
                tool_calls=openai_calls(object_list(item.get("tool_calls"))),
                tool_call_id=item.get("tool_call_id"),
            )
        )
    return messages


def openai_calls(items):
    """The tool calls of a message as the trial stores them (`id`, `name`, `arguments`), read by
    the one reader of a tool call (`sherlock.core.transcripts.read_call`: OpenAI's
    `function` object, Sherlock's own shape, JSON arguments parsed). A call the reader refuses
    (no name) is no call the trial can hold: it is left out, as a check would refuse it."""
    calls = []
    for item in items:
        try:
            call = read_call(item)
        except ValueError:
            continue
        calls.append({"id": call.id, "name": call.name, "arguments": call.arguments})
    return calls


def indexed_messages(attrs, prefix, inner):
    """`<prefix>.N.<inner>role`, `.content`, `.tool_call_id`, `.tool_calls.M.*` (OpenLLMetry's
    `gen_ai.prompt.0.role`; OpenInference's `llm.input_messages.0.message.role`, with
    `tool_calls.M.tool_call.function.name` and `contents.M.message_content.text`)."""
    messages = []
    for item in indexed_attributes(attrs, prefix):
        texts = [item.get(f"{inner}content")]
        texts += [
            v
            for k, v in sorted(item.items())
            if k.startswith(f"{inner}contents.") and k.endswith(".text")
        ]
        calls: dict[Any, Any] = {}
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
                content="\n".join(as_text(t) for t in texts if t not in (None, "")),
                tool_calls=[
                    {
                        "id": c.get("id"),
                        "name": c.get("name"),
                        "arguments": json_value(c.get("arguments")),
                    }
                    for _, c in sorted(calls.items(), key=lambda kv: index_of(kv[0]))
                ],
                tool_call_id=item.get(f"{inner}tool_call_id"),
            )
        )
    return [m for m in messages if m.role or m.content or m.tool_calls]


def event_messages(events, input_side):
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
                    content=as_text(json_value(attrs.get("content"))),
                    tool_calls=openai_calls(object_list(json_value(attrs.get("tool_calls")))),
                    tool_call_id=attrs.get("id"),
                )
            )
        elif input_side and name == "gen_ai.content.prompt":
            messages += openai_messages(json_value(attrs.get("gen_ai.prompt")))
        elif not input_side and name == "gen_ai.choice":
            message = json_value(attrs.get("message"))
            message = message if isinstance(message, dict) else {}
            content = first_present(message.get("content"), json_value(attrs.get("content")))
            calls = first_present(message.get("tool_calls"), json_value(attrs.get("tool_calls")))
            messages.append(
                Message(
                    role=str(message.get("role") or "assistant"),
                    content=as_text(content),
                    tool_calls=openai_calls(object_list(calls)),
                )
            )
        elif not input_side and name == "gen_ai.content.completion":
            messages += openai_messages(json_value(attrs.get("gen_ai.completion")), "assistant")
    return messages
