"""Golden tests of the normalizer, one per dialect: spans written by the OpenTelemetry SDK with
the attributes and events each convention (and the instrumentations that follow it) writes,
sent through the receiver, and the production trial the completed trace holds, whole."""

import json

import pytest

from production.models import Trace
from production.traces.closing import complete_traces
from production.traces.normalize import NORMALIZER_VERSION
from tests.support.otel_clients import export_body, finished_spans

RESOURCE = {"sherlock.agent": "support-bot", "sherlock.agent.version": 1}

QUESTION = "Where is order A1?"
ANSWER = "Order A1 ships today."
CONTEXT = "Orders ship within two days."


def trial_of(client, key, build):
    body = export_body(finished_spans(RESOURCE, build))
    response = client.post(
        "/api/v1/v1/traces",
        data=body,
        content_type="application/x-protobuf",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert response.status_code == 200
    complete_traces()
    trace = Trace.objects.get()
    assert trace.state == "complete"
    transcript = dict(trace.transcript)
    assert transcript.pop("latency_ms") >= 0
    meta = transcript.pop("trace")
    assert meta["trace_id"] == trace.trace_id and meta["normalizer_version"] == NORMALIZER_VERSION
    return trace, transcript


def genai_messages(*messages):
    return json.dumps([{"role": role, "parts": parts} for role, parts in messages])


def text(content):
    return [{"type": "text", "content": content}]


def genai_1_37(tracer):
    """The GenAI conventions >= 1.37: an agent span, two chat spans with JSON message parts,
    an execute_tool span between them."""
    with tracer.start_as_current_span("invoke_agent support-bot") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.provider.name", "openai")
        with tracer.start_as_current_span("chat small") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.provider.name", "openai")
            chat.set_attribute("gen_ai.request.model", "small")
            chat.set_attribute("gen_ai.response.model", "small-2026")
            chat.set_attribute("gen_ai.system_instructions", json.dumps(text("Be brief.")))
            chat.set_attribute("gen_ai.input.messages", genai_messages(("user", text(QUESTION))))
            call = {"type": "tool_call", "id": "c1", "name": "orders.lookup"}
            chat.set_attribute(
                "gen_ai.output.messages",
                genai_messages(("assistant", [{**call, "arguments": {"order": "A1"}}])),
            )
            chat.set_attribute("gen_ai.usage.input_tokens", 20)
            chat.set_attribute("gen_ai.usage.output_tokens", 5)
        with tracer.start_as_current_span("execute_tool orders.lookup") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "orders.lookup")
            tool.set_attribute("gen_ai.tool.call.id", "c1")
            tool.set_attribute("gen_ai.tool.call.arguments", '{"order": "A1"}')
            tool.set_attribute("gen_ai.tool.call.result", '{"status": "shipped"}')
        with tracer.start_as_current_span("chat small") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.request.model", "small")
            chat.set_attribute("gen_ai.response.model", "small-2026")
            chat.set_attribute(
                "gen_ai.input.messages",
                genai_messages(
                    ("user", text(QUESTION)),
                    ("tool", [{"type": "tool_call_response", "id": "c1", "response": "shipped"}]),
                ),
            )
            chat.set_attribute(
                "gen_ai.output.messages", genai_messages(("assistant", text(ANSWER)))
            )
            chat.set_attribute("gen_ai.usage.input_tokens", 30)
            chat.set_attribute("gen_ai.usage.output_tokens", 6)


def test_genai_1_37(client, agent, builder_key):
    trace, transcript = trial_of(client, builder_key, genai_1_37)
    assert trace.dialect == "genai"
    assert transcript == {
        "input": QUESTION,
        "output": ANSWER,
        "tool_calls": [
            {
                "id": "c1",
                "name": "orders.lookup",
                "arguments": {"order": "A1"},
                "result": {"status": "shipped"},
            }
        ],
        "contexts": [],
        "usage": {"prompt_tokens": 50, "completion_tokens": 11},
        "model": "small-2026",
    }
    assert (trace.input_tokens, trace.output_tokens, trace.model) == (50, 11, "small-2026")


def legacy_indexed(tracer):
    """<= 1.36 as OpenLLMetry writes it: gen_ai.system, indexed gen_ai.prompt.N.* and
    gen_ai.completion.N.* (tool calls included), the older usage names."""
    with tracer.start_as_current_span("agent.run"):
        with tracer.start_as_current_span("openai.chat") as chat:
            chat.set_attribute("gen_ai.system", "openai")
            chat.set_attribute("gen_ai.request.model", "small")
            chat.set_attribute("gen_ai.prompt.0.role", "system")
            chat.set_attribute("gen_ai.prompt.0.content", "Be brief.")
            chat.set_attribute("gen_ai.prompt.1.role", "user")
            chat.set_attribute("gen_ai.prompt.1.content", QUESTION)
            chat.set_attribute("gen_ai.completion.0.role", "assistant")
            chat.set_attribute("gen_ai.completion.0.finish_reason", "tool_calls")
            chat.set_attribute("gen_ai.completion.0.tool_calls.0.id", "c1")
            chat.set_attribute("gen_ai.completion.0.tool_calls.0.name", "orders.lookup")
            chat.set_attribute("gen_ai.completion.0.tool_calls.0.arguments", '{"order": "A1"}')
            chat.set_attribute("gen_ai.usage.prompt_tokens", 20)
            chat.set_attribute("gen_ai.usage.completion_tokens", 5)
        with tracer.start_as_current_span("openai.chat") as chat:
            chat.set_attribute("gen_ai.system", "openai")
            chat.set_attribute("gen_ai.request.model", "small")
            chat.set_attribute("gen_ai.response.model", "small")
            chat.set_attribute("gen_ai.prompt.0.role", "user")
            chat.set_attribute("gen_ai.prompt.0.content", QUESTION)
            chat.set_attribute("gen_ai.prompt.1.role", "tool")
            chat.set_attribute("gen_ai.prompt.1.tool_call_id", "c1")
            chat.set_attribute("gen_ai.prompt.1.content", '{"status": "shipped"}')
            chat.set_attribute("gen_ai.completion.0.role", "assistant")
            chat.set_attribute("gen_ai.completion.0.content", ANSWER)
            chat.set_attribute("gen_ai.usage.input_tokens", 30)
            chat.set_attribute("gen_ai.usage.output_tokens", 6)


def legacy_events_and_text(tracer):
    """<= 1.36 with one span event per message (gen_ai.system.message, gen_ai.user.message,
    gen_ai.choice) and the 1.26 gen_ai.prompt/gen_ai.completion text."""
    with tracer.start_as_current_span("chat small") as chat:
        chat.set_attribute("gen_ai.operation.name", "chat")
        chat.set_attribute("gen_ai.system", "openai")
        chat.set_attribute("gen_ai.request.model", "small")
        chat.add_event("gen_ai.system.message", {"gen_ai.system": "openai", "content": "Brief."})
        chat.add_event("gen_ai.user.message", {"gen_ai.system": "openai", "content": QUESTION})
        chat.add_event(
            "gen_ai.choice",
            {
                "gen_ai.system": "openai",
                "index": 0,
                "finish_reason": "stop",
                "message": json.dumps({"role": "assistant", "content": ANSWER}),
            },
        )
        chat.set_attribute("gen_ai.usage.input_tokens", 9)
        chat.set_attribute("gen_ai.usage.output_tokens", 4)


def test_genai_1_36_indexed(client, agent, builder_key):
    trace, transcript = trial_of(client, builder_key, legacy_indexed)
    assert trace.dialect == "genai_legacy"
    assert transcript == {
        "input": QUESTION,
        "output": ANSWER,
        "tool_calls": [
            {
                "id": "c1",
                "name": "orders.lookup",
                "arguments": {"order": "A1"},
                "result": {"status": "shipped"},
            }
        ],
        "contexts": [],
        "usage": {"prompt_tokens": 50, "completion_tokens": 11},
        "model": "small",
    }


def test_genai_1_36_message_events(client, agent, builder_key):
    trace, transcript = trial_of(client, builder_key, legacy_events_and_text)
    assert trace.dialect == "genai_legacy"
    assert transcript == {
        "input": QUESTION,
        "output": ANSWER,
        "tool_calls": [],
        "contexts": [],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4},
        "model": "small",
    }


def test_genai_prompt_and_completion_as_json_attributes(client, agent, builder_key):
    def build(tracer):
        with tracer.start_as_current_span("chat small") as chat:
            chat.set_attribute("gen_ai.system", "openai")
            chat.set_attribute("gen_ai.prompt", json.dumps([{"role": "user", "content": QUESTION}]))
            chat.set_attribute("gen_ai.completion", ANSWER)

    trace, transcript = trial_of(client, builder_key, build)
    assert (trace.dialect, transcript["input"], transcript["output"]) == (
        "genai_legacy",
        QUESTION,
        ANSWER,
    )


def openinference(tracer):
    """OpenInference: a CHAIN root with input.value/output.value, a RETRIEVER with documents,
    an LLM span with indexed messages and token counts, a TOOL span."""
    with tracer.start_as_current_span("support-chain") as chain:
        chain.set_attribute("openinference.span.kind", "CHAIN")
        chain.set_attribute("input.value", QUESTION)
        chain.set_attribute("output.value", ANSWER)
        with tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute("openinference.span.kind", "RETRIEVER")
            retriever.set_attribute("input.value", QUESTION)
            retriever.set_attribute("retrieval.documents.0.document.id", "kb-1")
            retriever.set_attribute("retrieval.documents.0.document.content", CONTEXT)
            retriever.set_attribute("retrieval.documents.0.document.score", 0.9)
            retriever.set_attribute("retrieval.documents.1.document.content", "Refunds: 5 days.")
        with tracer.start_as_current_span("ChatCompletion") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.model_name", "small")
            llm.set_attribute("llm.input_messages.0.message.role", "user")
            llm.set_attribute("llm.input_messages.0.message.content", QUESTION)
            llm.set_attribute("llm.output_messages.0.message.role", "assistant")
            llm.set_attribute("llm.output_messages.0.message.content", "Looking it up.")
            llm.set_attribute("llm.token_count.prompt", 12)
            llm.set_attribute("llm.token_count.completion", 3)
            llm.set_attribute("llm.cost.total", 0.0002)
        with tracer.start_as_current_span("orders.lookup") as tool:
            tool.set_attribute("openinference.span.kind", "TOOL")
            tool.set_attribute("tool.name", "orders.lookup")
            tool.set_attribute("input.value", '{"order": "A1"}')
            tool.set_attribute("output.value", "shipped")


def test_openinference(client, agent, builder_key):
    trace, transcript = trial_of(client, builder_key, openinference)
    assert trace.dialect == "openinference"
    assert transcript == {
        "input": QUESTION,
        "output": ANSWER,
        "tool_calls": [
            {"name": "orders.lookup", "arguments": {"order": "A1"}, "result": "shipped"}
        ],
        "contexts": [CONTEXT, "Refunds: 5 days."],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
        "cost_usd": 0.0002,
        "model": "small",
    }
    assert str(trace.cost_usd) == "0.000200"  # billed by the spans, not priced


def genai_retrieval(tracer):
    """The GenAI conventions' retrieval span (`gen_ai.operation.name` `retrieval`): the query
    and the documents as JSON objects; one document recorded by id and score only, as an
    instrumentation that does not capture content writes it."""
    with tracer.start_as_current_span("invoke_agent support-bot") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("retrieval kb") as retrieval:
            retrieval.set_attribute("gen_ai.operation.name", "retrieval")
            retrieval.set_attribute("gen_ai.data_source.id", "kb")
            retrieval.set_attribute("gen_ai.retrieval.query.text", QUESTION)
            documents = [
                {"id": "d1", "score": 0.9, "content": CONTEXT},
                {"id": "d2", "score": 0.4},
                {"id": "d3", "score": 0.3, "content": "Refunds: 5 days."},
            ]
            retrieval.set_attribute("gen_ai.retrieval.documents", json.dumps(documents))
        with tracer.start_as_current_span("chat small") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.provider.name", "openai")
            chat.set_attribute("gen_ai.input.messages", genai_messages(("user", text(QUESTION))))
            chat.set_attribute(
                "gen_ai.output.messages", genai_messages(("assistant", text(ANSWER)))
            )


def test_genai_retrieval_spans_give_the_contexts(client, agent, builder_key):
    trace, transcript = trial_of(client, builder_key, genai_retrieval)
    assert trace.dialect == "genai"
    assert transcript == {
        "input": QUESTION,
        "output": ANSWER,
        "tool_calls": [],
        "contexts": [CONTEXT, "Refunds: 5 days."],
    }


def test_a_chat_span_carrying_documents_stays_a_model_call(client, agent, builder_key):
    """Only a `retrieval` operation (or a span with documents and no operation nor messages)
    is a retrieval step: a chat span that also records documents keeps its messages."""

    def build(tracer):
        with tracer.start_as_current_span("chat small") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.input.messages", genai_messages(("user", text(QUESTION))))
            chat.set_attribute(
                "gen_ai.output.messages", genai_messages(("assistant", text(ANSWER)))
            )
            chat.set_attribute("gen_ai.retrieval.documents", json.dumps([{"content": CONTEXT}]))

    trace, transcript = trial_of(client, builder_key, build)
    assert (transcript["input"], transcript["output"]) == (QUESTION, ANSWER)


def test_a_trace_mixing_dialects_is_one_trial_said_mixed(client, agent, builder_key):
    def build(tracer):
        with tracer.start_as_current_span("agent") as root:
            root.set_attribute("openinference.span.kind", "AGENT")
            root.set_attribute("input.value", QUESTION)
            with tracer.start_as_current_span("chat small") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.provider.name", "openai")
                chat.set_attribute(
                    "gen_ai.output.messages", genai_messages(("assistant", text(ANSWER)))
                )

    trace, transcript = trial_of(client, builder_key, build)
    assert trace.dialect == "mixed"
    assert (transcript["input"], transcript["output"]) == (QUESTION, ANSWER)


def test_spans_with_no_genai_attributes_make_a_trial_with_no_output(client, agent, builder_key):
    def build(tracer):
        with tracer.start_as_current_span("GET /orders"):
            pass

    trace, transcript = trial_of(client, builder_key, build)
    assert trace.dialect == "unknown"
    assert transcript == {"input": "", "output": None, "tool_calls": [], "contexts": []}


@pytest.mark.parametrize("model,priced", [("small", "0.000110"), ("unpriced", None)])
def test_usage_is_priced_with_the_model_prices_when_the_spans_carry_no_cost(
    client, agent, builder_key, model, priced
):
    from evaluations.models import ModelPrice

    ModelPrice.objects.create(model="small", usd_per_million_input=2, usd_per_million_output=10)

    def build(tracer):
        with tracer.start_as_current_span("chat") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.request.model", model)
            chat.set_attribute("gen_ai.usage.input_tokens", 5)
            chat.set_attribute("gen_ai.usage.output_tokens", 10)

    trace, _ = trial_of(client, builder_key, build)
    assert (str(trace.cost_usd) if trace.cost_usd is not None else None) == priced
