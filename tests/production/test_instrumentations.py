"""Golden tests from the real instrumentations: one RAG agent with a tool call (it retrieves the
refund policy, the model asks for `refunds_create`, the tool writes the refund to the demo
ledger and returns its receipt, the model answers), traced by each instrumentation a team
installs from PyPI, exported by the stock OTLP/HTTP exporter through a `BatchSpanProcessor`
(so every span reaches the live receiver after it ended, in a batch) to a live Sherlock.

Each trace must make the same production trial: the question, the answer, one tool call per
call (the model's request and the tool's span joined, by call id or by the span tree and the
tool's name), the tool's result as its content (not a framework's wrapper), the retrieved
context, tokens summed over both model calls, the model and its cost; and online scoring must
verify the tool's effect against the ledger by the trace's own clock (the receipt time is later
than the write, always).

- `openai-v2`: OpenTelemetry's `opentelemetry-instrumentation-openai-v2` (GenAI 1.37 messages);
  the team writes its retrieval and tool spans by the GenAI conventions;
- `openinference`: Arize's `openinference-instrumentation-openai`, same team spans;
- `openllmetry`: Traceloop's `opentelemetry-instrumentation-openai` 0.62, the tool span written
  as traceloop-sdk's `@tool` decorator writes it (`traceloop.span.kind`, `traceloop.entity.*`,
  no call id);
- `langchain`: `openinference-instrumentation-langchain` over `langchain-openai`, with a
  LangChain retriever and `@tool` (the tool span carries no call id; its output is the
  serialised `ToolMessage`);
- `pydantic-ai`: Pydantic AI's own GenAI spans (`invoke_agent`, `chat`, `execute_tool`).
"""

import json
import os
from decimal import Decimal
from unittest import mock

import openai
import pytest

from agents import demo
from agents.models import Tool
from evaluations.models import ModelPrice
from production.actions.create_online_rule import CreateOnlineRule
from production.models import Trace, TraceScore
from tests.support.llm_server import Reply, tool_call
from tests.support.otel_clients import otlp_provider

QUESTION = "Please refund order A1."
POLICY = "Refunds are allowed within 30 days of delivery."
ANSWER = "Your refund for order A1 is on its way."
TOOL = "refunds_create"
SCHEMA = {
    "type": "object",
    "properties": {"order": {"type": "string"}},
    "required": ["order"],
}
TOOLS = [{"type": "function", "function": {"name": TOOL, "parameters": SCHEMA}}]
INSTRUMENTATIONS = ["openai-v2", "openinference", "openllmetry", "langchain", "pydantic-ai"]


def refund(order):
    """The team's tool: the refund written to the destination; its receipt returned."""
    return demo.write_ledger("refund", order=order)


def genai_retrieval(tracer, query):
    """The retrieval span a team writes by the GenAI conventions (no instrumentation of an
    OpenAI client traces a vector store)."""
    with tracer.start_as_current_span("retrieval policies") as span:
        span.set_attribute("gen_ai.operation.name", "retrieval")
        span.set_attribute("gen_ai.retrieval.query.text", query)
        span.set_attribute(
            "gen_ai.retrieval.documents", json.dumps([{"id": "p1", "content": POLICY}])
        )
    return [POLICY]


def genai_tool(tracer, call):
    """The `execute_tool` span a team writes by the GenAI conventions, with the call's id."""
    arguments = json.loads(call.function.arguments)
    with tracer.start_as_current_span(f"execute_tool {TOOL}") as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", TOOL)
        span.set_attribute("gen_ai.tool.call.id", call.id)
        span.set_attribute("gen_ai.tool.call.arguments", call.function.arguments)
        result = refund(**arguments)
        span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
    return result


def traceloop_tool(tracer, call):
    """The span traceloop-sdk 0.62's `@tool` decorator writes around the function: its kind
    and name, `{"args", "kwargs"}` as input, the JSON of what it returned; no call id."""
    arguments = json.loads(call.function.arguments)
    with tracer.start_as_current_span(f"{TOOL}.tool") as span:
        span.set_attribute("traceloop.span.kind", "tool")
        span.set_attribute("traceloop.entity.name", TOOL)
        span.set_attribute("gen_ai.tool.name", TOOL)
        span.set_attribute("traceloop.entity.input", json.dumps({"args": [], "kwargs": arguments}))
        result = refund(**arguments)
        span.set_attribute("traceloop.entity.output", json.dumps(result))
    return result


def openai_agent(provider, llm_url, tool_span):
    """A RAG turn with the OpenAI SDK: retrieve, ask, run the tool, answer."""
    tracer = provider.get_tracer("team.agent")
    client = openai.OpenAI(base_url=llm_url, api_key="loopback")
    with tracer.start_as_current_span("support turn") as root:
        contexts = genai_retrieval(tracer, QUESTION)
        messages = [
            {"role": "system", "content": "Policy: " + " ".join(contexts)},
            {"role": "user", "content": QUESTION},
        ]
        first = client.chat.completions.create(model="small", messages=messages, tools=TOOLS)
        call = first.choices[0].message.tool_calls[0]
        result = tool_span(tracer, call)
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)},
        ]
        second = client.chat.completions.create(model="small", messages=messages, tools=TOOLS)
        assert second.choices[0].message.content == ANSWER
    return root


def langchain_agent(provider, llm_url):
    from langchain_core.documents import Document
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    class Policies(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            return [Document(page_content=POLICY)]

    @tool
    def refunds_create(order: str) -> dict:
        """Create a refund for an order."""
        return refund(order)

    model = ChatOpenAI(model="small", base_url=llm_url, api_key="loopback")
    model = model.bind_tools([refunds_create])
    with provider.get_tracer("team.agent").start_as_current_span("support turn") as root:
        documents = Policies().invoke(QUESTION)
        messages = [SystemMessage("Policy: " + documents[0].page_content), HumanMessage(QUESTION)]
        asked = model.invoke(messages)
        messages.append(asked)
        messages += [refunds_create.invoke(call) for call in asked.tool_calls]
        assert model.invoke(messages).content == ANSWER
    return root


def pydantic_ai_agent(provider, llm_url):
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    settings = InstrumentationSettings(tracer_provider=provider, include_content=True, version=5)
    model = OpenAIChatModel("small", provider=OpenAIProvider(base_url=llm_url, api_key="x"))
    agent = Agent(model, capabilities=[Instrumentation(settings=settings)])

    @agent.tool_plain(name=TOOL)
    def refunds_create(order: str) -> dict:
        return refund(order)

    with provider.get_tracer("team.agent").start_as_current_span("support turn") as root:
        genai_retrieval(provider.get_tracer("team.agent"), QUESTION)
        assert agent.run_sync(QUESTION).output == ANSWER
    return root


def run_agent(name, provider, llm_url):
    env = {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
        "TRACELOOP_TRACE_CONTENT": "true",
    }
    with mock.patch.dict(os.environ, env):
        if name == "langchain":
            from openinference.instrumentation.langchain import LangChainInstrumentor

            instrumentor = LangChainInstrumentor()
        elif name == "pydantic-ai":
            return pydantic_ai_agent(provider, llm_url)
        elif name == "openai-v2":
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

            instrumentor = OpenAIInstrumentor()
        elif name == "openinference":
            from openinference.instrumentation.openai import OpenAIInstrumentor

            instrumentor = OpenAIInstrumentor()
        else:
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor

            instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            if name == "langchain":
                return langchain_agent(provider, llm_url)
            tool_span = traceloop_tool if name == "openllmetry" else genai_tool
            return openai_agent(provider, llm_url, tool_span)
        finally:
            instrumentor.uninstrument()
            if name == "openllmetry":
                # 0.62.4's uninstrument leaves the chat wrapper in place (its unwrap by module
                # path finds nothing here; its spans would then parent the next test's):
                # taken off by hand.
                from openai.resources.chat.completions import Completions
                from opentelemetry.instrumentation.utils import unwrap

                unwrap(Completions, "create")


@pytest.fixture
def refunds_tool(db):
    verifier = {
        "kind": "python",
        "callable": "agents.demo.effect_in_ledger",
        "params": {"kind": "refund", "fields": ["order"]},
    }
    return Tool.objects.create(name=TOOL, effectful=True, verifier=verifier)


@pytest.mark.parametrize("name", INSTRUMENTATIONS)
def test_each_instrumentation_makes_one_trial_and_its_effect_verifies(
    live, agent, builder, builder_key, llm_server, refunds_tool, name
):
    ModelPrice.objects.create(
        model="small", usd_per_million_input=Decimal("1"), usd_per_million_output=Decimal("2")
    )
    CreateOnlineRule(
        acting_user=builder,
        agent=agent,
        checks=[{"label": "shape", "kind": "output_type", "params": {"type": "text"}}],
    ).execute()
    llm_server.script(
        [tool_call(TOOL, {"order": "A1"}, usage=(40, 9)), Reply(ANSWER, usage=(60, 12))]
    )
    resource = {"service.name": "support-bot", "sherlock.agent.version": 1}
    with otlp_provider(live.url, builder_key, resource) as (provider, _):
        root = run_agent(name, provider, llm_server.url)

    trace = Trace.objects.get(trace_id=format(root.get_span_context().trace_id, "032x"))
    assert trace.state == "complete", trace.state_reason
    trial = trace.transcript
    assert trial["input"] == QUESTION
    assert trial["output"] == ANSWER
    (call,) = trial["tool_calls"]  # one call per call: the request and its span joined
    receipt = call["result"]
    assert call["name"] == TOOL
    assert call["arguments"] == {"order": "A1"}
    assert isinstance(receipt, dict) and receipt["kind"] == "refund" and receipt["order"] == "A1"
    assert call["id"].startswith("call_")  # the model's id, even where the tool span has none
    assert trial["contexts"] == [POLICY]

    assert trial["usage"] == {"prompt_tokens": 40 + 60, "completion_tokens": 9 + 12}
    assert (trace.input_tokens, trace.output_tokens) == (100, 21)
    assert trace.model == "small"
    assert trace.cost_usd == Decimal("0.000142")  # 100 x $1 + 21 x $2 per million tokens

    score = TraceScore.objects.get(trace=trace)
    assert score.state == "scored"
    (effect,) = score.tool_effects
    assert effect["state"] == "verified", effect


def test_an_effect_verifies_whatever_the_exporters_timing(
    client, agent, builder, builder_key, refunds_tool, django_capture_on_commit_callbacks
):
    """The spans of one turn sent one per call, in reverse order (the tool's span first, the
    root first) and after they ended: the trial's clock is its spans' own, so the refund
    written during the turn is the turn's, however late and in whatever order it arrives. The
    root arriving first completes the trace at once, and it is scored on what came; the spans
    arriving after rebuild the trial, and the trace is scored again on the whole of it."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.support.otel_clients import export_body

    CreateOnlineRule(
        acting_user=builder,
        agent=agent,
        checks=[{"label": "shape", "kind": "output_type", "params": {"type": "text"}}],
    ).execute()
    memory = InMemorySpanExporter()
    resource = Resource.create({"sherlock.agent": "support-bot", "sherlock.agent.version": 1})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("team.agent")

    class Call:
        id = "call_late"

        class function:
            arguments = json.dumps({"order": "A1"})

    with tracer.start_as_current_span("support turn"):
        genai_retrieval(tracer, QUESTION)
        genai_tool(tracer, Call)
    spans = list(memory.get_finished_spans())  # [retrieval, tool, root]: as they ended
    for span in reversed(spans):
        with django_capture_on_commit_callbacks(execute=True):  # scoring follows completion
            response = client.post(
                "/api/v1/v1/traces",
                data=export_body([span]),
                content_type="application/x-protobuf",
                HTTP_AUTHORIZATION=f"Token {builder_key}",
            )
        assert response.status_code == 200
        if span is spans[-1]:  # the root came first: the trace is complete, and scored
            assert TraceScore.objects.get().tool_effects == []
    from production.traces.closing import complete_traces

    complete_traces()
    from production.online import scoring

    scoring.sweep()
    trace = Trace.objects.get()
    assert trace.received_at > trace.first_span_at  # exported after the agent acted
    (effect,) = TraceScore.objects.get(trace=trace).tool_effects
    assert effect["state"] == "verified", effect
