"""The receiver's answers to what an exporter may send: OTLP's own response in the request's
encoding, partial success naming what was refused and why, and every bad request a 4xx in
OTLP's Status with nothing written (never a 500)."""

import gzip
import json

import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from production.models import Span, Trace
from production.traces.closing import complete_traces
from tests.support import factories
from tests.support.governance import api_key, grant_on
from tests.support.otel_clients import export_body, export_json, finished_spans

URL = "/api/v1/v1/traces"
PROTOBUF = "application/x-protobuf"


def two_spans(tracer):
    with tracer.start_as_current_span("invoke_agent"), tracer.start_as_current_span("chat m"):
        pass


def post(client, body, key, content_type=PROTOBUF, **headers):
    if key:
        headers["HTTP_AUTHORIZATION"] = f"Token {key}"
    return client.post(URL, data=body, content_type=content_type, **headers)


def answer(response):
    message = ExportTraceServiceResponse()
    message.ParseFromString(response.content)
    return message


def status_of(response):
    if response["Content-Type"].startswith("application/json"):
        return response.json()
    message = status_pb2.Status()
    message.ParseFromString(response.content)
    return {"code": message.code, "message": message.message}


RESOURCE = {"sherlock.agent": "support-bot", "sherlock.agent.version": 1}


def test_accepted_spans_answer_an_empty_response_in_protobuf(client, agent, builder_key):
    response = post(client, export_body(finished_spans(RESOURCE, two_spans)), builder_key)
    assert response.status_code == 200
    assert response["Content-Type"] == PROTOBUF
    assert not answer(response).HasField("partial_success")
    assert Span.objects.count() == 2 and Trace.objects.count() == 1


def test_a_json_request_is_answered_in_json(client, agent, builder_key):
    body = export_json(finished_spans(RESOURCE, two_spans))
    response = post(client, body, builder_key, content_type="application/json")
    assert response.status_code == 200 and response.json() == {}
    assert Span.objects.count() == 2


def test_a_gzip_body_is_read(client, agent, builder_key):
    body = gzip.compress(export_body(finished_spans(RESOURCE, two_spans)))
    response = post(client, body, builder_key, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 200 and Span.objects.count() == 2


def test_an_unknown_version_is_refused_in_partial_success(client, agent, builder_key):
    resource = {**RESOURCE, "sherlock.agent.version": 7}
    response = post(client, export_body(finished_spans(resource, two_spans)), builder_key)
    assert response.status_code == 200
    partial = answer(response).partial_success
    assert partial.rejected_spans == 2
    assert "has no version '7'" in partial.error_message
    assert Span.objects.count() == 0


def test_no_version_named_attributes_the_trace_to_the_live_version(client, agent, builder_key):
    version = agent.versions.get()
    type(agent).objects.filter(pk=agent.pk).update(live_version=version)
    post(
        client, export_body(finished_spans({"service.name": "support-bot"}, two_spans)), builder_key
    )
    assert Trace.objects.get().agent_version == version


@pytest.mark.parametrize("slug", ["no-such-agent", "other-bot"])
def test_an_agent_the_key_may_not_write_to_is_refused_the_same_way_whether_it_exists(
    client, agent, db, slug
):
    other = factories.agent("other-bot")
    someone = factories.user("someone")
    someone = grant_on(someone, "Builder", agent)  # a Builder of support-bot only
    key = api_key(someone)[1]
    resource = {"sherlock.agent": slug}
    partial = answer(post(client, export_body(finished_spans(resource, two_spans)), key))
    assert partial.partial_success.rejected_spans == 2
    assert partial.partial_success.error_message == (
        f"the resource names no agent this key may write to ({slug!r})"
    )
    assert not Trace.objects.filter(agent=other).exists()


@pytest.mark.parametrize("role", ["Editor", "Publisher"])
def test_roles_other_than_builder_and_admin_may_not_send_traces(client, agent, role):
    user = factories.user(role.lower(), role=role)
    body = export_body(finished_spans(RESOURCE, two_spans))
    partial = answer(post(client, body, api_key(user)[1])).partial_success
    assert partial.rejected_spans == 2 and Span.objects.count() == 0


def test_an_admin_may_send_traces(client, agent, admin_user):
    body = export_body(finished_spans(RESOURCE, two_spans))
    assert not answer(post(client, body, api_key(admin_user)[1])).HasField("partial_success")


def test_one_refused_resource_leaves_the_others_accepted(client, agent, builder_key):
    good = finished_spans(RESOURCE, two_spans)
    bad = finished_spans({"sherlock.agent": "nobody"}, two_spans)
    partial = answer(post(client, export_body(good + bad), builder_key)).partial_success
    assert partial.rejected_spans == 2 and Span.objects.count() == 2


def test_a_span_with_a_zero_trace_id_is_rejected_alone(client, agent, builder_key):
    message = ExportTraceServiceRequest()
    message.ParseFromString(export_body(finished_spans(RESOURCE, two_spans)))
    message.resource_spans[0].scope_spans[0].spans[0].trace_id = bytes(16)
    partial = answer(post(client, message.SerializeToString(), builder_key)).partial_success
    assert partial.rejected_spans == 1 and Span.objects.count() == 1


def test_a_span_sent_twice_is_kept_once(client, agent, builder_key):
    body = export_body(finished_spans(RESOURCE, two_spans))
    post(client, body, builder_key)
    post(client, body, builder_key)
    assert Span.objects.count() == 2


def test_a_nul_in_an_attribute_is_kept_as_a_replacement_character(client, agent, builder_key):
    def build(tracer):
        with tracer.start_as_current_span("a\x00b") as span:
            span.set_attribute("k", "x\x00y")

    post(client, export_body(finished_spans(RESOURCE, build)), builder_key)
    span = Span.objects.get()
    assert span.name == "a\ufffdb" and span.attributes["k"] == "x\ufffdy"


# --- refused whole ---------------------------------------------------------------------------


def assert_refused(response, status, *, json_body=False):
    assert response.status_code == status, response.content[:300]
    body = status_of(response)
    assert body["message"] and len(response.content) < 2000
    assert response["Content-Type"].startswith("application/json" if json_body else PROTOBUF)
    assert Span.objects.count() == 0 and Trace.objects.count() == 0
    return body


def test_no_key_answers_401_in_otlps_status(client, agent):
    response = post(client, export_body(finished_spans(RESOURCE, two_spans)), None)
    assert assert_refused(response, 401)["code"] == 16  # UNAUTHENTICATED
    assert response["WWW-Authenticate"]


def test_a_wrong_key_answers_401(client, agent):
    assert_refused(post(client, b"", "not-a-key"), 401)


@pytest.mark.parametrize("content_type", ["text/plain", "application/grpc", "multipart/form-data"])
def test_a_wrong_content_type_answers_415(client, agent, builder_key, content_type):
    assert_refused(post(client, b"x", builder_key, content_type=content_type), 415)


@pytest.mark.parametrize("body", [b"\xff\xff\xff", b"\x0a\x05abc"])
def test_a_body_that_is_no_export_request_answers_400(client, agent, builder_key, body):
    assert assert_refused(post(client, body, builder_key), 400)["code"] == 3


@pytest.mark.parametrize(
    "body",
    [
        "{",
        "[]",
        '{"resourceSpans": 3}',
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "00"}]}]}]}',
        "[" * 5000 + "]" * 5000,
        # deeper than any valid span could need (a NUL, by contrast, is recorded text: kept
        # as U+FFFD in both encodings, below)
        '{"resourceSpans": ' + "[" * 60 + "]" * 60 + "}",
    ],
)
def test_a_json_body_that_is_no_export_request_answers_400_in_json(
    client, agent, builder_key, body
):
    response = post(client, body.encode(), builder_key, content_type="application/json")
    assert assert_refused(response, 400, json_body=True)["code"] == 3


def test_a_body_over_the_limit_answers_413(client, agent, builder_key, settings):
    settings.SHERLOCK_API_MAX_BODY_BYTES = 2048
    assert_refused(post(client, b"\x0a" * 4096, builder_key), 413)


def test_a_gzip_bomb_stops_at_the_limit_and_answers_413(client, agent, builder_key, settings):
    settings.SHERLOCK_API_MAX_BODY_BYTES = 64 * 1024
    bomb = gzip.compress(b"\x00" * (50 * 1024 * 1024))  # 50 MB inflated, ~50 KB sent
    assert len(bomb) < settings.SHERLOCK_API_MAX_BODY_BYTES
    response = post(client, bomb, builder_key, HTTP_CONTENT_ENCODING="gzip")
    assert "decompresses to more than" in assert_refused(response, 413)["message"]


@pytest.mark.parametrize(
    "body",
    [b"not gzip at all", gzip.compress(b"abc" * 100, mtime=0)[:-10]],
    ids=["not gzip", "cut short"],  # stable ids: parallel workers must collect the same tests
)
def test_a_broken_gzip_body_answers_400(client, agent, builder_key, body):
    assert_refused(post(client, body, builder_key, HTTP_CONTENT_ENCODING="gzip"), 400)


def test_an_unknown_content_encoding_answers_415(client, agent, builder_key):
    assert_refused(post(client, b"x", builder_key, HTTP_CONTENT_ENCODING="br"), 415)


def test_get_is_not_allowed(client, agent, builder_key):
    response = client.get(URL, HTTP_AUTHORIZATION=f"Token {builder_key}")
    assert response.status_code == 405


# --- completeness ------------------------------------------------------------------------------


def test_a_child_before_its_parent_waits_then_the_trace_completes(client, agent, builder_key):
    spans = finished_spans(RESOURCE, two_spans)  # [child, root]: the child ends first
    post(client, export_body(spans[:1]), builder_key)
    complete_traces()
    trace = Trace.objects.get()
    assert trace.state == "open"
    post(client, export_body(spans[1:]), builder_key)
    complete_traces()
    trace.refresh_from_db()
    assert trace.state == "complete" and trace.span_count == 2


def test_a_trace_never_finished_is_incomplete_after_the_quiet_window(
    client, agent, builder_key, settings
):
    spans = finished_spans(RESOURCE, two_spans)
    post(client, export_body(spans[:1]), builder_key)
    trace = Trace.objects.get()
    complete_traces(now=trace.last_received_at)
    trace.refresh_from_db()
    assert trace.state == "open"
    later = trace.last_received_at + __import__("datetime").timedelta(
        seconds=settings.SHERLOCK_TRACE_QUIET_SECONDS + 1
    )
    assert complete_traces(now=later) == 1
    trace.refresh_from_db()
    assert trace.state == "incomplete"
    assert "parent spans that never came" in trace.state_reason
    assert trace.transcript is not None  # what came is still a trial to look at


def test_a_span_arriving_after_completion_joins_and_the_trial_is_rebuilt(
    client, agent, builder_key
):
    def three(tracer):
        with tracer.start_as_current_span("invoke_agent"):
            with tracer.start_as_current_span("chat m"):
                pass
            with tracer.start_as_current_span("execute_tool t") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "orders.lookup")

    spans = finished_spans(RESOURCE, three)  # chat, tool, root
    post(client, export_body([spans[0], spans[2]]), builder_key)
    complete_traces()
    trace = Trace.objects.get()
    assert trace.state == "complete" and trace.transcript["tool_calls"] == []
    post(client, export_body([spans[1]]), builder_key)
    complete_traces()
    trace.refresh_from_db()
    assert trace.state == "complete" and trace.span_count == 3
    assert [c["name"] for c in trace.transcript["tool_calls"]] == ["orders.lookup"]


def test_the_json_body_may_name_fields_in_either_case(client, agent, builder_key):
    body = json.loads(export_json(finished_spans(RESOURCE, two_spans)))
    for span in body["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["trace_id"] = span.pop("traceId")
    response = post(client, json.dumps(body).encode(), builder_key, content_type="application/json")
    assert response.status_code == 200 and Span.objects.count() == 2


# --- cost: a constant number of queries, and the key as this process verified it ---------------


def traces_of(count):
    def build(tracer):
        for _ in range(count):
            with tracer.start_as_current_span("invoke_agent"):
                for _ in range(4):
                    with tracer.start_as_current_span("chat m"):
                        pass

    return build


def queries_of(client, key, body):
    """The queries of one export call, its completion task enqueued (the broker's row) and not
    run, as in a deployment."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django_q.conf import Conf

    Conf.SYNC = False
    try:
        with CaptureQueriesContext(connection) as captured:
            assert post(client, body, key).status_code == 200
    finally:
        Conf.SYNC = True
    return [query["sql"] for query in captured.captured_queries]


def test_an_export_call_makes_the_same_queries_for_one_trace_as_for_thirty(
    client, agent, builder_key
):
    post(client, export_body(finished_spans(RESOURCE, two_spans)), builder_key)  # remembered
    one = queries_of(client, builder_key, export_body(finished_spans(RESOURCE, traces_of(1))))
    # 30: on SQLite the ORM writes 39 traces a statement (999 parameters, 25 columns).
    many = queries_of(client, builder_key, export_body(finished_spans(RESOURCE, traces_of(30))))
    assert len(one) == len(many) <= 8
    assert Span.objects.count() == 2 + 5 + 150 and Trace.objects.count() == 32
    # The remembered key is re-checked (revoked, expired, active) instead of loaded.
    assert "revoked" in one[0] and "hashed_key" not in one[0]


def test_a_key_revoked_after_it_was_remembered_writes_nothing_from_the_next_call(
    client, agent, builder
):
    row, key = api_key(builder)
    assert post(client, export_body(finished_spans(RESOURCE, two_spans)), key).status_code == 200
    # A queryset update, as a revocation in another worker is to this process: no signal.
    type(row).objects.filter(pk=row.pk).update(revoked=True)
    response = post(client, export_body(finished_spans(RESOURCE, two_spans)), key)
    assert response.status_code == 401 and "revoked" in status_of(response)["message"]
    assert Span.objects.count() == 2


def test_a_key_expired_after_it_was_remembered_writes_nothing_from_the_next_call(
    client, agent, builder
):
    from datetime import timedelta

    from django.utils import timezone

    row, key = api_key(builder)
    assert post(client, export_body(finished_spans(RESOURCE, two_spans)), key).status_code == 200
    type(row).objects.filter(pk=row.pk).update(expiry_date=timezone.now() - timedelta(seconds=1))
    response = post(client, export_body(finished_spans(RESOURCE, two_spans)), key)
    assert response.status_code == 401 and "expired" in status_of(response)["message"]
    assert Span.objects.count() == 2


def test_a_builder_role_taken_away_elsewhere_stops_the_writes_within_the_memory(
    client, agent, builder, settings, monkeypatch
):
    from governance.api import authentication

    settings.SHERLOCK_API_AUTH_CACHE_SECONDS = 5
    _, key = api_key(builder)
    assert post(client, export_body(finished_spans(RESOURCE, two_spans)), key).status_code == 200
    # The membership deleted as another process's RevokeRole would be, to this one: no signal.
    type(builder).groups.through.objects.filter(user=builder).delete()
    type(builder).user_permissions.through.objects.filter(user=builder).delete()
    assert not answer(post(client, export_body(finished_spans(RESOURCE, two_spans)), key)).HasField(
        "partial_success"
    )  # within the 5 seconds
    now = authentication.time.monotonic() + 5
    monkeypatch.setattr(authentication.time, "monotonic", lambda: now)
    refused = answer(post(client, export_body(finished_spans(RESOURCE, two_spans)), key))
    assert refused.partial_success.rejected_spans == 2 and Span.objects.count() == 4


# --- one rule for both encodings -------------------------------------------------------------


def nested_request(depth, *, nul=False):
    """An export request of one span whose attribute `deep` nests `depth` key-value lists (and
    the same in an event's attribute), built from the OTLP messages themselves: the SDK's
    `set_attribute` takes no nested value."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    value = AnyValue(string_value="leaf\x00" if nul else "leaf")
    for _ in range(depth):
        value = AnyValue(kvlist_value={"values": [KeyValue(key="k", value=value)]})
    message = ExportTraceServiceRequest()
    resource_spans = message.resource_spans.add()
    for key, text in (("sherlock.agent", "support-bot"),):
        resource_spans.resource.attributes.add(key=key, value=AnyValue(string_value=text))
    span = resource_spans.scope_spans.add().spans.add(
        trace_id=bytes.fromhex("0af7651916cd43dd8448eb211c80319c"),
        span_id=bytes.fromhex("b7ad6b7169203331"),
        name="turn",
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_001_000_000_000,
    )
    span.attributes.add(key="deep", value=value)
    span.events.add(name="e", time_unix_nano=1_700_000_000_500_000_000).attributes.add(
        key="deep", value=value
    )
    return message


def as_otlp_json(message):
    """The message in OTLP/JSON: protobuf's JSON mapping with the ids as hex."""
    from google.protobuf import json_format

    document = json_format.MessageToDict(message)
    for resource_spans in document["resourceSpans"]:
        for scope in resource_spans["scopeSpans"]:
            for span in scope["spans"]:
                for name in ("traceId", "spanId"):
                    span[name] = __import__("base64").b64decode(span[name]).hex()
    return json.dumps(document).encode()


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_both_encodings_accept_the_same_nesting(client, agent, builder_key, encoding):
    """Attribute values nest at most 10 levels in either encoding: at 10 the span is kept, at
    11 it is rejected alone with the reason (docs/production.md, "Sending traces")."""

    def send(message):
        if encoding == "json":
            return post(client, as_otlp_json(message), builder_key, content_type="application/json")
        return post(client, message.SerializeToString(), builder_key)

    response = send(nested_request(10))
    assert response.status_code == 200, response.content[:300]
    assert Span.objects.count() == 1
    Span.objects.all().delete()
    Trace.objects.all().delete()

    response = send(nested_request(11))
    assert response.status_code == 200, response.content[:300]
    if encoding == "json":
        partial = response.json()["partialSuccess"]
        rejected, message = int(partial["rejectedSpans"]), partial["errorMessage"]
    else:
        partial = answer(response).partial_success
        rejected, message = partial.rejected_spans, partial.error_message
    assert rejected == 1 and "deeper than 10 levels" in message
    assert Span.objects.count() == 0


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_a_nul_is_kept_as_a_replacement_character_in_both_encodings(
    client, agent, builder_key, encoding
):
    message = nested_request(1, nul=True)
    if encoding == "json":
        body = as_otlp_json(message)
        assert b"\\u0000" in body
        response = post(client, body, builder_key, content_type="application/json")
    else:
        response = post(client, message.SerializeToString(), builder_key)
    assert response.status_code == 200, response.content[:300]
    assert Span.objects.get().attributes["deep"] == {"k": "leaf\ufffd"}
