"""Bad input to every endpoint family answers a 4xx in the one error shape, writes nothing and
echoes no more than an excerpt: deeply nested JSON, an oversized body, an
oversized text field, wrong types, unknown fields and a 100,000-character slug in a URL.

The operations come from the served schema, so every endpoint that reads a body is tried,
including those added later; each is called as a global Admin (a role that may use it), so
the refusal is the input's, not the role's."""

import json

import pytest

from agents.actions.create_draft_version import CreateDraftVersion
from agents.models import AgentVersion
from governance.actions.request_bypass import RequestBypass
from governance.models import AuditEntry, Bypass
from sherlock.core.errors import ActionInvalid
from sherlock.core.limits import JSON_MAX_DEPTH, NOTE_MAX, REASON_MAX, excerpt, json_depth
from tests.support.api_errors import (
    assert_error_shape,
    operations,
    request_properties,
    rows,
    schema,
    url_of,
)
from tests.support.api_world import seed_every_kind
from tests.support.governance import REASON, api_client

BODY_OPERATIONS = operations(with_body=True)
OBJECT_OPERATIONS = [(m, p) for m, p in operations(with_body=False) if m == "get"]
NESTED = "[" * 5_000 + "]" * 5_000  # 10 KB, 5,000 deep: a RecursionError in json.loads
LONG_SLUG = "a" * 100_000


def label(value):
    return f"{value[0].upper()} {value[1]}" if isinstance(value, tuple) else None


@pytest.fixture
def world(admin_user, builder):
    return seed_every_kind(admin_user, builder)


@pytest.fixture
def client(admin_user):
    return api_client(admin_user)


def send(client, method, url, raw, content_type="application/json"):
    return client.generic(method.upper(), url, raw, content_type=content_type)


BAD_BODIES = [
    (NESTED, 400, "too_deep"),
    ('{"a": ' * 2_000 + "1" + "}" * 2_000, 400, "too_deep"),
    ("{", 400, "parse_error"),
    ("NaN", 400, "parse_error"),
    ('{"reason": 1e400}', 400, "parse_error"),  # inf: neither JSON nor storable
    ('{"reason": "a\\u0000b"}', 400, "parse_error"),  # PostgreSQL stores no NUL
    ("[1, 2, 3]", 400, None),
    ('"text"', 400, None),
    ("42", 400, None),
    (json.dumps({"no_such_field": 1, "z" * 10_000: 2}), 400, "unknown_field"),
]


@pytest.mark.parametrize("operation", BODY_OPERATIONS, ids=label)
def test_bad_bodies_answer_4xx_in_the_shape_and_write_nothing(world, client, operation, settings):
    """Deeply nested (10 KB), not JSON, of the wrong type, with unknown fields, too large,
    form-encoded: each refused in the shape, before anything is written."""
    method, path = operation
    url = url_of(path, world)
    before = rows()
    for raw, status, code in BAD_BODIES:
        body = assert_error_shape(send(client, method, url, raw), status)
        if code in ("unknown_field", "too_deep") and "import" in path:
            # The import takes a list of cases (or a file), not an object, and reads it with
            # the cases reader, which names the item of a too-deep case (`invalid`, its line
            # under `errors`).
            code = None
        assert code is None or body["code"] == code, (raw[:40], body)
        if code == "unknown_field":
            assert body["field"] == "no_such_field"
    form = send(client, method, url, "reason=x&note=y", "application/x-www-form-urlencoded")
    assert assert_error_shape(form, 415)["code"] == "unsupported_media_type"
    settings.SHERLOCK_API_MAX_BODY_BYTES = 4_096
    body = assert_error_shape(send(client, method, url, json.dumps({"reason": "x" * 5_000})), 413)
    assert body["code"] == "too_large" and "4096 bytes" in body["detail"]
    assert rows() == before


@pytest.mark.parametrize("operation", BODY_OPERATIONS, ids=label)
def test_fields_over_their_limit_or_of_the_wrong_type_answer_400_naming_them(
    world, client, operation
):
    method, path = operation
    url = url_of(path, world)
    properties = {
        name: spec
        for name, spec in request_properties(method, path).items()
        if not spec.get("readOnly")
    }
    before = rows()
    for name, spec in properties.items():
        if spec.get("type") == "string" and "maxLength" in spec:
            raw = json.dumps({name: "x" * (spec["maxLength"] + 1)})
            body = assert_error_shape(send(client, method, url, raw), 400)
            assert name in error_fields(body), body
            assert len(json.dumps(body)) < 1_000  # the long value is not echoed
    typed = [
        name
        for name, spec in properties.items()
        if spec.get("type") in ("string", "integer", "number", "boolean")
    ]
    if typed:
        raw = json.dumps({name: {"not": ["a scalar"]} for name in typed})
        body = assert_error_shape(send(client, method, url, raw), 400)
        assert error_fields(body) & set(typed), body
    assert rows() == before


def error_fields(body):
    return {body.get("field")} | {e.get("field") for e in body.get("errors", [])}


@pytest.mark.parametrize("operation", OBJECT_OPERATIONS, ids=label)
def test_a_100000_character_slug_in_the_url_answers_404_without_echoing_it(client, operation):
    method, path = operation
    response = client.get(url_of(path, {}, value=LONG_SLUG))
    assert_error_shape(response, 404)


def test_a_100000_character_query_value_is_not_echoed(world, client):
    for url in (
        f"/api/v1/datasets/gate-basics/diff/?a={LONG_SLUG}&b=1",
        f"/api/v1/runs/compare/?a={LONG_SLUG}&b=1",
        "/api/v1/runs/compare/?a=\u00b2&b=1",  # a digit to str.isdigit, not to int()
        "/api/v1/datasets/gate-basics/diff/?a=\u00b2&b=1",
        f"/api/v1/datasets/gate-basics/export/?format={LONG_SLUG}",
        f"/api/v1/versions/?state={LONG_SLUG}",
        f"/api/v1/audit/?since={LONG_SLUG}",
    ):
        assert_error_shape(client.get(url), 400)


def test_an_unrouted_api_path_answers_404_in_the_shape(client):
    assert_error_shape(client.get("/api/v1/no-such-thing/"), 404)


def test_no_credentials_answer_401_and_a_wrong_method_405_in_the_shape(world):
    from rest_framework.test import APIClient

    body = assert_error_shape(APIClient().get("/api/v1/agents/"), 401)
    assert body["code"] == "not_authenticated"
    assert assert_error_shape(APIClient().put("/api/v1/agents/"), 401)


def test_a_wrong_method_answers_405_in_the_shape(client):
    body = assert_error_shape(client.put("/api/v1/agents/", {}), 405)
    assert body["code"] == "method_not_allowed"


def test_several_field_errors_are_listed_each_in_the_shape(client):
    body = assert_error_shape(
        client.post("/api/v1/agents/", {"slug": "not a slug", "name": ""}), 400
    )
    assert {e["field"] for e in body["errors"]} == {"slug", "name"}
    assert body["field"] == "slug" and body["detail"].startswith("slug: ")


def test_every_operation_documents_the_error_shape():
    document = schema()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status in ("401", "403"):
                answer = operation["responses"][status]["content"]["application/json"]
                assert answer["schema"] == {"$ref": "#/components/schemas/Error"}, (path, method)
            if "requestBody" in operation:
                assert {"400", "413", "415"} <= set(operation["responses"]), (path, method)
    error = document["components"]["schemas"]["Error"]
    assert set(error["properties"]) == {"detail", "code", "field", "errors"}


def test_the_schema_documents_the_text_limits():
    reason = request_properties("post", "/api/v1/publish-requests/{id}/bypass/")["reason"]
    notes = request_properties("post", "/api/v1/versions/")["notes"]
    note = request_properties("post", "/api/v1/dataset-versions/{id}/freeze/")["note"]
    assert (reason["maxLength"], notes["maxLength"], note["maxLength"]) == (
        REASON_MAX,
        NOTE_MAX,
        NOTE_MAX,
    )


# --- the actions: the admin, the commands and the tasks obey the same limits --------------


def test_the_action_refuses_notes_and_a_config_over_their_limits(world, builder):
    from agents.models import Agent

    agent = Agent.objects.get(slug="support-bot")
    count = AgentVersion.objects.count()
    for fields, field in (
        ({"notes": "x" * 1_000_000}, "notes"),
        ({"config": {"callable": "x", "blob": "y" * 1_000_000}}, "config"),
        ({"config": {"a": json.loads("[" * 40 + "]" * 40)}}, "config"),
    ):
        action = CreateDraftVersion(
            acting_user=builder,
            agent=agent,
            adapter="python",
            **{"config": {"callable": "x"}, **fields},
        )
        with pytest.raises(ActionInvalid) as refused:
            action.execute()
        assert refused.value.field == field and len(str(refused.value)) < 200
    assert AgentVersion.objects.count() == count


def test_a_1mb_bypass_reason_is_refused_and_never_reaches_the_audit_log(world, admin_user):
    from governance.models import PublishRequest

    blocked = PublishRequest.objects.get(state="blocked")
    bypasses = Bypass.objects.count()
    with pytest.raises(ActionInvalid) as refused:
        RequestBypass(
            acting_user=admin_user, publish_request=blocked, reason=REASON + "x" * 1_000_000
        ).execute()
    assert refused.value.field == "reason" and refused.value.code == "too_long"
    assert Bypass.objects.count() == bypasses
    refusal = AuditEntry.objects.order_by("-sequence").first()
    assert refusal.action == "governance.bypass.refused"
    assert len(json.dumps(refusal.after)) + len(refusal.reason) < 500


def test_an_excerpt_says_how_long_the_value_was():
    assert excerpt("short") == "'short'"
    cut = excerpt("a" * 100_000)
    assert len(cut) < 100 and "100000 characters" in cut


def test_depth_is_measured_without_recursion():
    deep = []
    for _ in range(10_000):
        deep = [deep]
    assert json_depth(deep) == 10_001
    assert json_depth({"a": [1, {"b": 2}]}) == 3
    assert json_depth("text") == 0 and JSON_MAX_DEPTH < 100


def test_a_long_value_quoted_by_a_refusal_is_cut_to_an_excerpt(world, client):
    body = {"agent": "support-bot", "adapter": "python", "config": {"callable": "x"}}
    one = client.post("/api/v1/versions/", {**body, "tools": ["t" * 100_000]})
    assert "100000 characters" in assert_error_shape(one, 400)["detail"]
    many = client.post("/api/v1/versions/", {**body, "adapter": "z" * 100_000, "slug": "y"})
    assert_error_shape(many, 400)


def test_an_upload_over_the_limit_answers_413_and_imports_nothing(world, client, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.SHERLOCK_API_MAX_BODY_BYTES = 4_096
    before = rows()
    upload = SimpleUploadedFile(
        "cases.jsonl", b'{"key": "big", "input": "' + b"x" * 8_000 + b'"}\n'
    )
    response = client.post(
        "/api/v1/datasets/gate-basics/draft/import/", {"file": upload}, format="multipart"
    )
    assert assert_error_shape(response, 413)["code"] == "too_large"
    assert rows() == before


def test_a_valid_cron_longer_than_its_column_is_refused_naming_it(world, admin_user):
    from agents.models import Agent
    from evaluations.actions.create_schedule import CreateSchedule
    from evaluations.models import Dataset

    cron = ",".join(str(m) for m in range(60)) + " * * * *"  # valid, 174 characters
    with pytest.raises(ActionInvalid) as refused:
        CreateSchedule(
            acting_user=admin_user,
            agent=Agent.objects.get(slug="support-bot"),
            dataset=Dataset.objects.get(slug="gate-basics"),
            repetitions=1,
            cron=cron,
        ).execute()
    assert (refused.value.field, refused.value.code) == ("cron", "too_long")


def test_the_log_line_of_a_100000_character_path_is_cut(client):
    import logging

    from django.conf import settings as django_settings

    from sherlock.core.limits import LOG_LINE_MAX, ClipLogRecords

    assert "clip" in django_settings.LOGGING["handlers"]["console"]["filters"]
    record = logging.LogRecord("django.request", logging.WARNING, "", 0, "Not Found: %s", (), None)
    record.args = (f"/api/v1/runs/{LONG_SLUG}/",)
    whole = len(record.getMessage())
    assert ClipLogRecords().filter(record) is True
    line = record.getMessage()
    assert len(line) < LOG_LINE_MAX + 40 and line.endswith(f"({whole} characters)")
