"""Reading what a team sent: `GET /api/v1/traces/` (filters, search, cursor pages, in a
constant number of queries) and `GET /api/v1/traces/{id}/` (the normalized transcript, the
spans in tree order, the score), scoped by the same roles as the pages; sessions and users
read from the standard attributes."""

import json

import pytest

from production.models import Trace
from tests.support import factories
from tests.support.governance import api_client, grant_on
from tests.support.otel_clients import export_body, finished_spans

RESOURCE = {"sherlock.agent": "support-bot", "deployment": "eu-1"}


def turn(question, answer, *, session=None, user=None, conversation=None, error=False):
    def build(tracer):
        from opentelemetry.trace import Status, StatusCode

        with tracer.start_as_current_span("invoke_agent") as root:
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            if session:
                root.set_attribute("session.id", session)
            if user:
                root.set_attribute("user.id", user)
            with tracer.start_as_current_span("chat small") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                if conversation:
                    chat.set_attribute("gen_ai.conversation.id", conversation)
                chat.set_attribute(
                    "gen_ai.input.messages",
                    json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": question}]}]
                    ),
                )
                chat.set_attribute(
                    "gen_ai.output.messages",
                    json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
                    ),
                )
            if error:
                root.set_status(Status(StatusCode.ERROR, "tool failed"))

    return build


def send(client, key, *builds, resource=RESOURCE):
    spans = [span for build in builds for span in finished_spans(resource, build)]
    response = client.post(
        "/api/v1/v1/traces",
        data=export_body(spans),
        content_type="application/x-protobuf",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert response.status_code == 200


@pytest.fixture
def sent(client, agent, builder_key):
    send(
        client,
        builder_key,
        turn("Where is my parcel?", "It ships today.", session="s-1", user="ana"),
        turn("And the refund?", "Refund sent.", session="s-1", user="ana"),
        turn("Hello", "Hi!", conversation="c-9", user="bo", error=True),
    )
    by_question = {t.input_text: t for t in Trace.objects.all()}
    return [by_question[q] for q in ("Where is my parcel?", "And the refund?", "Hello")]


def test_the_list_filters_by_session_user_state_and_search(builder, sent):
    api = api_client(builder)
    rows = api.get("/api/v1/traces/").json()["results"]
    assert len(rows) == 3 and rows[0]["id"] > rows[-1]["id"]  # newest first
    assert {r["session"] for r in rows} == {"s-1", "c-9"}  # gen_ai.conversation.id too
    assert {r["end_user"] for r in rows} == {"ana", "bo"}

    def ids(**query):
        answer = api.get("/api/v1/traces/", query)
        assert answer.status_code == 200, answer.content
        return sorted(r["id"] for r in answer.json()["results"])

    assert ids(session="s-1") == sorted([sent[0].pk, sent[1].pk])
    assert ids(user="bo") == [sent[2].pk]
    assert ids(has_error="true") == [sent[2].pk]
    assert ids(q="refund") == [sent[1].pk]
    every = sorted(t.pk for t in sent)
    assert ids(state="complete", agent="support-bot") == every
    assert ids(attribute="deployment=eu-1") == every  # the resource's
    assert ids(attribute="user.id=ana") == sorted([sent[0].pk, sent[1].pk])  # a span's
    assert ids(attribute="deployment=us") == []
    assert ids(received_after="2000-01-01T00:00:00Z") == every
    # An offset ISO allows and PostgreSQL refuses (beyond 15:59): compared in UTC, not a 500.
    assert ids(received_before="2000-01-01T23:10:00+23:10") == []
    assert ids(received_after="0223-05-11T17:56:35.812077+23:10") == every


def test_bad_filters_answer_400_naming_the_parameter(builder, sent):
    api = api_client(builder)
    for query, field in (
        ({"attribute": "no-equals-sign"}, "attribute"),
        ({"state": "sideways"}, "state"),
        ({"received_after": "yesterday"}, "received_after"),
        ({"received_before": "0001-01-01T00:00:00+05:00"}, "received_before"),  # before year 1
        ({"version": "2" * 30}, "version"),
    ):
        answer = api.get("/api/v1/traces/", query)
        assert answer.status_code == 400, (query, answer.content)
        assert answer.json()["field"] == field, answer.json()


def test_the_list_pages_by_cursor_in_constant_queries(
    client, builder, builder_key, agent, django_assert_max_num_queries
):
    send(client, builder_key, *[turn(f"Q{n}", f"A{n}", session="long") for n in range(7)])
    api = api_client(builder)
    seen, url = [], "/api/v1/traces/?page_size=3"
    with django_assert_max_num_queries(8):
        page = api.get(url).json()
    while True:
        seen += [r["id"] for r in page["results"]]
        if not page["next"]:
            break
        page = api.get(page["next"]).json()
    assert len(seen) == len(set(seen)) == 7 and "count" not in page


def test_the_detail_has_the_transcript_the_span_tree_and_the_score(builder, sent):
    trace = sent[0]
    body = api_client(builder).get(f"/api/v1/traces/{trace.pk}/").json()
    assert body["transcript"]["input"] == "Where is my parcel?"
    assert body["transcript"]["output"] == "It ships today."
    spans = body["spans"]
    assert [(s["name"], s["depth"]) for s in spans] == [("invoke_agent", 0), ("chat small", 1)]
    assert spans[1]["parent_span_id"] == spans[0]["span_id"]
    assert body["resource"]["deployment"] == "eu-1"
    assert body["score"] is None  # no online rule


def test_traces_are_read_with_the_agents_roles(client, sent):
    """An Editor (global) sees every agent's traces; a Builder of another agent sees none, and
    the detail answers 404 as for a trace that does not exist."""
    editor = factories.user("ed", role="Editor")
    assert len(api_client(editor).get("/api/v1/traces/").json()["results"]) == 3
    other = factories.agent("other-bot")
    stranger = grant_on(factories.user("stranger"), "Builder", other)
    api = api_client(stranger)
    assert api.get("/api/v1/traces/").json()["results"] == []
    assert api.get(f"/api/v1/traces/{sent[0].pk}/").status_code == 404
    from rest_framework.test import APIClient

    assert APIClient().get("/api/v1/traces/").status_code == 401


def test_the_traces_page_filters_and_the_session_page_reads_the_conversation(
    client, agent, builder, sent, django_assert_max_num_queries
):
    client.force_login(builder)
    page = client.get("/production/traces/", {"q": "refund"}).content.decode()
    assert "And the refund?" in page and "Where is my parcel?" not in page
    page = client.get("/production/traces/", {"session": "s-1"}).content.decode()
    assert "And the refund?" in page and "Hello" not in page
    assert "/production/agents/support-bot/session/?id=s-1" in page

    with django_assert_max_num_queries(10):
        response = client.get("/production/agents/support-bot/session/", {"id": "s-1"})
    session = response.content.decode()
    assert session.index("Where is my parcel?") < session.index("And the refund?")  # in order
    assert "It ships today." in session and "ana" in session
    assert client.get("/production/agents/support-bot/session/", {"id": "nope"}).status_code == 404
    stranger = grant_on(factories.user("stranger"), "Builder", factories.agent("other-bot"))
    client.force_login(stranger)
    assert client.get("/production/agents/support-bot/session/", {"id": "s-1"}).status_code == 404
