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

from dataclasses import dataclass, field
from typing import Any

from production.traces.assembly import (
    SESSION_KEYS,
    USER_KEYS,
    answer,
    declared_completion,
    identity,
    joined_tool_calls,
    last_user,
    trace_latency,
    unique_spans,
)
from production.traces.messages import (
    Message,
    event_messages,
    indexed_messages,
    openai_messages,
    parts_messages,
    parts_text,
)
from production.traces.values import (
    as_int,
    as_text,
    first_present,
    indexed_attributes,
    json_value,
    sum_present,
)

# 2: GenAI retrieval spans (gen_ai.retrieval.documents) give contexts; 3: one tool call per
# call (requests joined to tool spans), and `sherlock.declared_complete`.
NORMALIZER_VERSION = 3

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
    spans = unique_spans(spans)
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

    input_value = first_present(
        root_step.input_value if root_step.kind != "llm" else None,
        last_user(root_step.input_messages) if root_step.kind == "agent" else None,
        last_user(llm[0].input_messages) if llm else None,
        llm[0].input_value if llm else None,
    )
    output_value = first_present(
        root_step.output_value if root_step.kind != "llm" else None,
        answer(root_step.output_messages) if root_step.kind == "agent" else None,
        answer(llm[-1].output_messages) if llm else None,
        llm[-1].output_value if llm else None,
    )
    transcript = {
        "input": "" if input_value is None else input_value,
        "output": output_value,
        "tool_calls": joined_tool_calls(steps),
        "contexts": [doc for _, step in steps for doc in step.documents],
    }
    input_tokens = sum_present(step.input_tokens for step in llm)
    output_tokens = sum_present(step.output_tokens for step in llm)
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
    latency = trace_latency(root, spans)
    if latency is not None:
        transcript["latency_ms"] = latency
    declared = declared_completion(root, spans)
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
        input_text=as_text(transcript["input"]),
        output_text=as_text(output_value),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        latency_ms=latency,
        model=model[:200],
        has_error=any(s["status_code"] == 2 for s in spans),
        session=identity(root, spans, SESSION_KEYS),
        end_user=identity(root, spans, USER_KEYS),
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
    step.input_tokens = as_int(
        first_present(
            merged.get("gen_ai.usage.input_tokens"), merged.get("gen_ai.usage.prompt_tokens")
        )
    )
    step.output_tokens = as_int(
        first_present(
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
            "arguments": json_value(
                first_present(
                    merged.get("gen_ai.tool.call.arguments"), merged.get("traceloop.entity.input")
                )
            ),
            "result": json_value(
                first_present(
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
        step.input_value = json_value(merged.get("gen_ai.retrieval.query.text"))
        step.documents = _retrieved(json_value(merged.get("gen_ai.retrieval.documents")))
        return step
    # Messages: 1.37's parts first, then the older forms.
    step.system = parts_text(json_value(merged.get("gen_ai.system_instructions")))
    step.input_messages = parts_messages(json_value(merged.get("gen_ai.input.messages")))
    step.output_messages = parts_messages(json_value(merged.get("gen_ai.output.messages")))
    if not step.input_messages:
        step.input_messages = (
            openai_messages(json_value(merged.get("gen_ai.prompt")))
            or indexed_messages(merged, "gen_ai.prompt", "")
            or event_messages(events, input_side=True)
        )
    if not step.output_messages:
        step.output_messages = (
            openai_messages(json_value(merged.get("gen_ai.completion")), default_role="assistant")
            or indexed_messages(merged, "gen_ai.completion", "")
            or event_messages(events, input_side=False)
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
        step.input_value = json_value(merged.get("traceloop.entity.input"))
        step.output_value = json_value(merged.get("traceloop.entity.output"))
    return step


def _openinference(attrs):
    kind = str(attrs.get("openinference.span.kind", "")).upper()
    step = Step(dialect=OPENINFERENCE)
    step.input_value = json_value(attrs.get("input.value"))
    step.output_value = json_value(attrs.get("output.value"))
    if kind == "LLM":
        step.kind = "llm"
        step.input_messages = indexed_messages(attrs, "llm.input_messages", "message.")
        step.output_messages = indexed_messages(attrs, "llm.output_messages", "message.")
        step.system = "\n".join(m.content for m in step.input_messages if m.role == "system")
        step.model = str(attrs.get("llm.model_name") or "")
        step.input_tokens = as_int(attrs.get("llm.token_count.prompt"))
        step.output_tokens = as_int(attrs.get("llm.token_count.completion"))
        cost = attrs.get("llm.cost.total")
        step.cost = float(cost) if isinstance(cost, int | float) else None
    elif kind == "TOOL":
        step.kind = "tool"
        arguments = step.input_value
        if arguments is None:
            arguments = json_value(attrs.get("tool.parameters"))
        step.tool = {
            "id": attrs.get("tool_call.id"),
            "name": attrs.get("tool.name") or attrs.get("tool_call.function.name") or "tool",
            "arguments": arguments,
            "result": step.output_value,
        }
    elif kind == "RETRIEVER":
        step.kind = "retrieval"
        for document in indexed_attributes(attrs, "retrieval.documents"):
            content = document.get("document.content")
            if content is not None:
                step.documents.append(as_text(content))
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
            texts.append(as_text(content))
    return texts
