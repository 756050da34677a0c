"""The OTLP/HTTP receiver fed by the stock OpenTelemetry Python SDK and its exporters, over
HTTP to a live server: protobuf and JSON, configured by the exporter's environment variables,
spans joining their trace across export calls and completing when the root ends."""

import json

import pytest

from production.models import Span, Trace
from production.traces.normalize import NORMALIZER_VERSION
from tests.support.otel_clients import otlp_provider


def messages(role, text):
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_the_sdks_exporter_sends_a_trace_that_is_stored_and_completed(
    live, agent, builder_key, encoding
):
    resource = {"service.name": "support-bot", "sherlock.agent.version": 1}
    with otlp_provider(live.url, builder_key, resource, encoding) as (provider, exporter):
        tracer = provider.get_tracer("team.agent")
        with tracer.start_as_current_span("invoke_agent support-bot") as root:
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            with tracer.start_as_current_span("chat small-model") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.provider.name", "openai")
                chat.set_attribute("gen_ai.request.model", "small-model")
                chat.set_attribute("gen_ai.input.messages", messages("user", "Where is my order?"))
                chat.set_attribute("gen_ai.output.messages", messages("assistant", "On its way."))
                chat.set_attribute("gen_ai.usage.input_tokens", 12)
                chat.set_attribute("gen_ai.usage.output_tokens", 4)
        trace_hex = format(root.get_span_context().trace_id, "032x")

    trace = Trace.objects.get(trace_id=trace_hex)
    assert trace.agent == agent and trace.agent_version.number == 1
    assert trace.state == "complete" and trace.state_reason == "its root span ended"
    assert Span.objects.filter(trace=trace).count() == 2
    assert trace.root_span_id == format(root.get_span_context().span_id, "016x")
    assert trace.transcript["input"] == "Where is my order?"
    assert trace.transcript["output"] == "On its way."
    assert trace.transcript["usage"] == {"prompt_tokens": 12, "completion_tokens": 4}
    assert trace.dialect == "genai" and trace.normalizer_version == NORMALIZER_VERSION
    assert trace.resource["service.name"] == "support-bot"


def test_spans_of_one_trace_across_export_calls_join_it_and_a_child_first_waits(
    live, agent, builder_key
):
    resource = {"sherlock.agent": "support-bot"}
    with otlp_provider(live.url, builder_key, resource) as (provider, _):
        tracer = provider.get_tracer("team.agent")
        root = tracer.start_span("invoke_agent")
        from opentelemetry import trace as api

        context = api.set_span_in_context(root)
        child = tracer.start_span("execute_tool orders.lookup", context=context)
        child.set_attribute("gen_ai.operation.name", "execute_tool")
        child.set_attribute("gen_ai.tool.name", "orders.lookup")
        child.end()
        provider.force_flush()  # the child's call: its parent has not come
        trace_hex = format(root.get_span_context().trace_id, "032x")
        trace = Trace.objects.get(trace_id=trace_hex)
        assert trace.state == "open"
        root.end()
    trace.refresh_from_db()
    assert trace.state == "complete"
    assert trace.span_count == 2
    assert trace.transcript["tool_calls"][0]["name"] == "orders.lookup"
