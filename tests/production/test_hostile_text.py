"""Recorded text is kept by the project's one rule (`sherlock.core.text`): a NUL or a lone
surrogate a tracer sends, in any kind of attribute, becomes U+FFFD, and the trace completes and
is scored like any other. Run on both databases: on PostgreSQL a NUL reaching a text or jsonb
column is a `DataError`, which used to leave the trace, and every other trace of its batch,
open for ever."""

import json
from datetime import timedelta

import pytest
from django.db import DatabaseError
from django.utils import timezone

from production.actions.create_online_rule import CreateOnlineRule
from production.models import Span, Trace, TraceScore
from production.online import scoring
from production.traces import closing
from production.traces.closing import complete_traces
from sherlock.core.text import has_unstorable
from tests.support.otel_clients import export_body, finished_spans

URL = "/api/v1/v1/traces"
RESOURCE = {"sherlock.agent": "support-bot", "sherlock.agent.version": 1, "team\x00": "a\x00b"}
NUL_JSON = "\\u0000"  # the six characters an attribute holding JSON writes for a NUL


def post(client, spans, key):
    return client.post(
        URL,
        data=export_body(spans),
        content_type="application/x-protobuf",
        HTTP_AUTHORIZATION=f"Token {key}",
    )


def poisoned(tracer):
    """An agent turn where an end user typed a NUL: in the span's name, string, array and
    key-value attributes, event names and attributes, a status message, and inside the JSON
    the instrumentations write as attribute text (GenAI messages, tool arguments and results,
    OpenInference values)."""
    from opentelemetry.trace import Status, StatusCode

    with tracer.start_as_current_span("invoke_agent \x00") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("user.note", "typed \x00 here")
        root.set_attribute("tags", ["a\x00", "b"])
        root.set_attribute("key\x00", "value")
        root.add_event("said\x00", {"text": "x\x00y"})
        with tracer.start_as_current_span("chat small") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.provider.name", "openai")
            chat.set_attribute("gen_ai.request.model", "small\x00")
            chat.set_attribute(
                "gen_ai.input.messages",
                json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi\x00"}]}]),
            )
            chat.set_attribute(
                "gen_ai.output.messages",
                '[{"role": "assistant", "parts": [{"type": "text", "content": "ok'
                + NUL_JSON
                + '"}, {"type": "tool_call", "id": "c1", "name": "kb'
                + NUL_JSON
                + '", "arguments": {"q'
                + NUL_JSON
                + '": "x"}}]}]',
            )
        with tracer.start_as_current_span("execute_tool kb") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "kb")
            tool.set_attribute("gen_ai.tool.call.id", "c1")
            tool.set_attribute("gen_ai.tool.call.result", '{"hit": "a' + NUL_JSON + '"}')
            tool.set_status(Status(StatusCode.ERROR, "failed \x00"))
        with tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute("openinference.span.kind", "RETRIEVER")
            retriever.set_attribute("input.value", '{"query": "q' + NUL_JSON + '"}')
            retriever.set_attribute("retrieval.documents.0.document.content", "doc\x00")


def healthy(tracer):
    with tracer.start_as_current_span("invoke_agent") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("chat small") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute(
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]),
            )


def nowhere_nul(value):
    return not has_unstorable(value)


@pytest.fixture
def rule(agent, builder):
    return CreateOnlineRule(
        acting_user=builder,
        agent=agent,
        checks=[{"label": "shape", "kind": "output_type", "params": {"type": "text"}}],
    ).execute()


def test_a_nul_in_every_kind_of_attribute_completes_and_scores(client, agent, builder_key, rule):
    bad = finished_spans(RESOURCE, poisoned)
    assert post(client, bad + finished_spans(RESOURCE, healthy), builder_key).status_code == 200
    complete_traces()

    assert list(Trace.objects.values_list("state", flat=True)) == ["complete", "complete"]
    trace = Trace.objects.get(trace_id=format(bad[0].context.trace_id, "032x"))
    trial = trace.transcript
    assert nowhere_nul(trial) and nowhere_nul(trace.resource)
    assert trial["output"] == "ok\ufffd"
    assert trial["input"] == "hi\ufffd"
    assert trial["contexts"] == ["doc\ufffd"]
    (call,) = trial["tool_calls"]
    assert call["result"] == {"hit": "a\ufffd"}
    assert trace.model == "small\ufffd"
    for span in Span.objects.all():
        assert nowhere_nul([span.name, span.attributes, span.events, span.status_message])

    scoring.sweep()
    assert set(TraceScore.objects.values_list("state", flat=True)) == {"scored"}
    assert all(nowhere_nul(s.results) for s in TraceScore.objects.all())


def test_a_trace_that_cannot_be_stored_is_marked_and_holds_back_no_other(
    client, agent, builder_key, monkeypatch
):
    """Whatever else makes a trial unstorable (here the database refusing one), that trace
    ends incomplete with the reason, in its own transaction; the others of the batch and an
    unrelated orphan decided by the same sweep complete."""
    bad = finished_spans(RESOURCE, healthy)
    good = finished_spans(RESOURCE, healthy)
    orphan = finished_spans(RESOURCE, healthy)[:1]  # the child alone: its parent never came
    bad_id = format(bad[0].context.trace_id, "032x")
    real = closing._trial

    def refusing(trace, spans, now, prices):
        if trace.trace_id == bad_id:
            raise DatabaseError("unsupported Unicode escape sequence")
        return real(trace, spans, now, prices)

    monkeypatch.setattr(closing, "_trial", refusing)
    post(client, bad + good + orphan, builder_key)  # completion runs at once (rooted traces)
    later = timezone.now() + timedelta(hours=1)
    complete_traces(now=later)

    states = {t.trace_id: (t.state, t.state_reason) for t in Trace.objects.all()}
    assert states[bad_id][0] == "incomplete"
    assert "could not be stored" in states[bad_id][1]
    others = [state for trace_id, (state, _) in states.items() if trace_id != bad_id]
    assert sorted(others) == ["complete", "incomplete"]  # the good one, and the orphan decided
