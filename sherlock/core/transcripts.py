"""A transcript's tool calls, read one way everywhere (docs/checks.md, "The transcript").

Adapters produce transcripts, so the reading of ``transcript["tool_calls"]`` lives beside them.
The checks (``tools_used``, ``trajectory``), evidence collection (each effectful call's
verifier) and the OpenTelemetry export all read calls through ``tool_calls``: a call a check
scores is the call whose effect is verified and the span that is exported. Before one reader,
a Vertex-shaped call was scored but its effect never verified.

One call may come in any of these shapes:

- Sherlock's own, what the adapters write: ``{"id", "name", "arguments", "result", "denied"}``;
- OpenAI's: ``{"id", "type": "function", "function": {"name", "arguments"}}``;
- Vertex AI's trajectory: ``{"tool_name", "tool_input"}``.

Arguments sent as a JSON string (OpenAI does) are parsed; a string that is not JSON stays the
string it is. ``denied`` is the adapter's boolean: only ``true`` says the policy refused the
call. Anything else is a ValueError: a bare string is not read as a name, because a string where
a list belongs would otherwise become one "call" per character (``"tool_calls": "email.send"``
once passed a forbidden-tool guardrail that way).

What a case EXPECTS (``expected_tools``, ``expected.trajectory``, ``tools_used``'s
``params.tools``) is read by ``read_expected_calls``, which also takes a plain string inside
the list as a name-only call (``["kb.search", {"name": "orders.lookup", ...}]``, as
docs/checks.md promises). A transcript is never read that way: what an agent did stays strict.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sherlock.core.numbers import LATENCY_MS, TOKENS, USD


@dataclass(frozen=True)
class ToolCall:
    """One tool call, whatever shape it came in. ``arguments`` None means "not specified"."""

    name: str
    arguments: Any = None
    id: Any = None
    result: Any = None
    denied: bool = False


def read_call(item: Any) -> ToolCall:
    """One call in any accepted shape as a ToolCall; ValueError when it is not one."""
    if not isinstance(item, Mapping):
        raise ValueError(f"a tool call must be an object, got {item!r}")
    given = item.get("function")
    function: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    name = item.get("name") or item.get("tool_name") or function.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"a tool call has no name: {item!r}")
    if "arguments" in item:
        arguments = item["arguments"]
    else:
        arguments = item.get("tool_input", function.get("arguments"))
    if isinstance(arguments, str):
        # An unparsable argument string is kept as the string it is.
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    return ToolCall(
        name=name,
        arguments=arguments,
        id=item.get("id"),
        result=item.get("result"),
        denied=item.get("denied") is True,
    )


def read_calls(value: Any, what: str) -> list[ToolCall]:
    """``value`` as ToolCalls; ValueError unless it is a list of calls. ``what`` names the list
    in the message ("tool_calls", "expected tools", "the reference")."""
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list of tool calls, got {type(value).__name__}")
    return [read_call(item) for item in value]


def read_expected_calls(value: Any, what: str) -> list[ToolCall]:
    """Expected calls as ToolCalls: a list whose items are calls or plain tool names (a name-only
    call). ValueError for anything else, a bare string where the list belongs included."""
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list of tool calls, got {type(value).__name__}")
    calls = []
    for item in value:
        if isinstance(item, str):
            if not item:
                raise ValueError("a tool name is empty")
            calls.append(ToolCall(name=item))
        else:
            calls.append(read_call(item))
    return calls


def tool_calls(transcript: Mapping[str, Any]) -> list[ToolCall] | None:
    """The transcript's tool calls, or None when it does not record any (no ``tool_calls`` key:
    not the same as ``[]``, which adapters write when the agent called nothing). ValueError when
    ``tool_calls`` is not a list of calls in an accepted shape."""
    calls = transcript.get("tool_calls")
    if calls is None:
        return None
    return read_calls(calls, "tool_calls")


def figure_problems(
    transcript: Mapping[str, Any], where: str = "transcript"
) -> list[tuple[str, str]]:
    """The figures a transcript reports outside their documented ranges
    (`sherlock.core.numbers`), as (key, "<where>.<field>: <problem>"): its latency, its token
    usage and its cost. ``key`` is the transcript's key at fault (``latency_ms``, ``usage``,
    ``cost_usd``). What an adapter, a client upload or a trace reports is checked with this
    before it is stored, so no figure can overflow a column or a sum (docs/api.md,
    "Numbers")."""
    problems = []
    latency = transcript.get("latency_ms")
    if latency is not None and (problem := LATENCY_MS.problem(latency)):
        problems.append(("latency_ms", f"{where}.latency_ms: {problem}"))
    usage = transcript.get("usage")
    if usage is not None:
        if not isinstance(usage, Mapping):
            problems.append(("usage", f"{where}.usage: must be an object"))
        else:
            for name in ("prompt_tokens", "completion_tokens"):
                value = usage.get(name)
                if value is not None and (problem := TOKENS.problem(value)):
                    problems.append(("usage", f"{where}.usage.{name}: {problem}"))
    cost = transcript.get("cost_usd")
    if cost is not None and (problem := USD.problem(cost)):
        problems.append(("cost_usd", f"{where}.cost_usd: {problem}"))
    return problems


def check_figures(transcript: Mapping[str, Any], where: str = "transcript") -> None:
    """ValueError naming the first figure of `transcript` out of its range (`figure_problems`)."""
    problems = figure_problems(transcript, where)
    if problems:
        raise ValueError(problems[0][1])
