"""No input reaches a 500: a NUL character anywhere in a request (path, query string,
form or JSON body) is refused with 400, in the API's error shape under /api/ and as the site's
400 page elsewhere; an integer beyond a 64-bit signed one is 400 (a filter) or 404 (an id); a
date that is not one is 400 on the audit page as in the API. Each was a 500 on SQLite, on
PostgreSQL, or on both (the tests run on both)."""

import pytest

from evaluations.models import Run
from governance.models import AuditEntry
from tests.support.api_errors import assert_error_shape
from tests.support.api_world import seed_every_kind
from tests.support.governance import api_client

BEYOND = (2**63, -(2**63) - 1)  # the first integers no database column holds


@pytest.fixture
def world(admin_user, builder):
    return seed_every_kind(admin_user, builder)


@pytest.fixture
def admin_page(client, admin_user):
    client.force_login(admin_user)
    return client


def assert_bad_request_page(response):
    assert response.status_code == 400, response.content[:300]
    body = response.content.decode()
    assert "Bad request" in body and '<nav aria-label="main">' in body
    assert "NUL" in body
    return body


# --- NUL ------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["admin_user", "outsider"])
def test_a_nul_in_an_api_path_answers_400_in_the_shape_for_any_signed_in_key(world, request, who):
    client = api_client(request.getfixturevalue(who))
    for method, url in (
        ("get", "/api/v1/api-keys/a%00b/"),
        ("post", "/api/v1/api-keys/a%00b/revoke/"),
        ("post", "/api/v1/api-keys/a%00b/"),
        ("get", "/api/v1/agents/%00/"),
    ):
        body = assert_error_shape(getattr(client, method)(url, {}, format="json"), 400)
        assert body["code"] == "nul_character", (url, body)


def test_a_nul_in_a_query_parameter_answers_400_naming_it(world, admin_user):
    client = api_client(admin_user)
    body = assert_error_shape(client.get("/api/v1/role-grants/?user=a%00b"), 400)
    assert (body["code"], body["field"]) == ("nul_character", "user")
    assert body["detail"].startswith("user: ")
    raw = client.get("/api/v1/audit/", QUERY_STRING="actor=a\x00b")  # unescaped, too
    assert assert_error_shape(raw, 400)["field"] == "actor"
    assert "field" not in assert_error_shape(client.get("/api/v1/agents/?a%00=1"), 400)
    assert assert_error_shape(client.get("/api/v1/agents/?path=%00"), 400)["field"] == "path"


def test_a_nul_in_a_json_body_field_answers_400_and_creates_nothing(world, admin_user):
    from agents.models import Agent

    client = api_client(admin_user)
    before = Agent.objects.count()
    for body in ({"slug": "nul-bot", "name": "a\x00b"}, {"slug": "nul-bot", "a\x00": "b"}):
        answer = assert_error_shape(client.post("/api/v1/agents/", body, format="json"), 400)
        assert answer["code"] == "parse_error" and "NUL" in answer["detail"]
    assert Agent.objects.count() == before


def test_a_nul_in_a_pages_query_answers_the_sites_400_page(world, admin_page):
    for url in (
        "/governance/audit/?actor=a%00b",
        "/governance/audit/?target=a%00b",
        "/trends/?agent=a%00b&dataset=gate-basics",
        "/trends/?agent=support-bot&dataset=%00",
        "/runs/?agent=%00",
    ):
        assert_bad_request_page(admin_page.get(url))


def test_a_nul_in_a_form_body_answers_the_sites_400_page_and_verifies_nothing(world, admin_page):
    before = AuditEntry.objects.count()
    response = admin_page.post(
        "/governance/audit/verify/", "note=a%00b", content_type="application/x-www-form-urlencoded"
    )
    assert_bad_request_page(response)
    assert AuditEntry.objects.count() == before


def test_a_session_cookie_with_a_nul_is_no_session(world):
    from django.test import Client
    from rest_framework.test import APIClient

    page = Client(HTTP_COOKIE="sessionid=abcdefgh\x00ijkl")
    assert page.get("/runs/").status_code == 302  # signed out: to the sign-in page
    assert (
        APIClient(HTTP_COOKIE="sessionid=abcdefgh\x00ijkl").get("/api/v1/agents/").status_code
        == 401
    )


def test_an_escaped_percent_is_not_a_nul(world, admin_page, admin_user):
    assert admin_page.get("/governance/audit/?actor=%2500").status_code == 200
    client = api_client(admin_user)
    assert client.get("/api/v1/role-grants/?user=%2500").status_code == 200


@pytest.mark.parametrize("param", ["user", "role", "scope", "agent", "dataset"])
def test_a_nul_in_any_role_grants_filter_answers_400(world, admin_user, param):
    body = assert_error_shape(
        api_client(admin_user).get("/api/v1/role-grants/", {param: "a\x00b"}), 400
    )
    assert body["code"] == "nul_character"


def test_a_nul_in_an_import_address_answers_400_and_writes_nothing(world, admin_page, admin_user):
    before = AuditEntry.objects.count()
    for url in (
        "/admin/evaluations/dataset/1%00/import/",
        "/admin/evaluations/dataset/1\x00/import/",
    ):
        assert_bad_request_page(admin_page.post(url, {"preview": "Preview"}))
        assert_bad_request_page(admin_page.get(url))
    api = api_client(admin_user)
    imported = api.post(
        "/api/v1/datasets/gate%00basics/draft/import/", "[]", content_type="application/json"
    )
    assert assert_error_shape(imported, 400)["code"] == "nul_character"
    assert assert_error_shape(api.get("/api/v1/datasets/gate%00basics/export/"), 400)
    assert AuditEntry.objects.count() == before


def test_the_audit_writer_stores_no_nul_whoever_calls_it(db):
    """The last line of defence: an entry quoting input with a NUL is written (PostgreSQL
    stores none), the NUL replaced by U+FFFD, as all recorded text (`sherlock.core.text`)."""
    from governance.models import verify_chain
    from sherlock.core.audit import audit

    entry = audit(
        "evaluations.dataset.refused",
        target=("evaluations.dataset", "1\x00", "a\x00b"),
        after={"verb": "import\x00", "k\x00": ["x\x00"]},
        reason="why\x00",
    )
    entry.refresh_from_db()
    assert (entry.target_id, entry.target_repr, entry.reason) == (
        "1\ufffd",
        "a\ufffdb",
        "why\ufffd",
    )
    assert entry.after == {"verb": "import\ufffd", "k\ufffd": ["x\ufffd"]}
    assert verify_chain()[1] is None  # the hash is over what is stored


def test_a_hidden_object_named_with_a_nul_is_audited_not_a_500(world, admin_user, rf):
    """`audit_hidden` (the admin's hidden-object refusal) reached with a NUL id, as any path
    past the middleware would: no lookup with the NUL, an entry with it replaced by U+FFFD."""
    from evaluations.models import Dataset
    from sherlock.core.hidden import audit_hidden

    request = rf.post("/admin/evaluations/dataset/1/import/")
    request.user = admin_user
    audit_hidden(request, Dataset, {"pk": "1\x00"}, verb="import")
    entry = AuditEntry.objects.latest("sequence")
    assert (entry.action, entry.target_id, entry.after["exists"]) == (
        "evaluations.dataset.refused",
        "1\ufffd",
        False,
    )


# --- integers beyond 64 bits ------------------------------------------------------------------


@pytest.mark.parametrize("who", ["admin_user", "outsider"])
def test_a_run_filter_beyond_64_bits_answers_400_naming_it(world, request, who):
    client = api_client(request.getfixturevalue(who))
    for value in BEYOND:
        body = assert_error_shape(client.get(f"/api/v1/trials/?run={value}"), 400)
        assert body["field"] == "run", body
    assert assert_error_shape(client.get("/api/v1/trials/?run=1.5"), 400)["field"] == "run"
    largest = client.get(f"/api/v1/trials/?run={2**63 - 1}")
    assert largest.status_code == 200 and largest.json()["results"] == []


def test_an_id_beyond_64_bits_in_a_path_is_not_found(world, admin_user):
    client = api_client(admin_user)
    for value in BEYOND:
        assert_error_shape(client.get(f"/api/v1/runs/{value}/"), 404)
        assert_error_shape(client.post(f"/api/v1/runs/{value}/cancel/", {}, format="json"), 404)


def test_the_compare_page_refuses_ids_beyond_64_bits_or_not_ascii_with_400(
    world, admin_page, admin_user
):
    run = Run.objects.first()
    for value in (*BEYOND, "\u00b2", "0"):
        response = admin_page.get("/runs/compare/", {"a": value, "b": run.pk})
        assert response.status_code == 400, value
        assert "&#x27;a&#x27; must be a run id" in response.content.decode()
        response = admin_page.get("/runs/compare/", {"a": run.pk, "b": value})
        assert response.status_code == 400, value
        assert admin_page.get("/runs/compare/", {"a": "live", "b": value}).status_code == 400
    api = api_client(admin_user)
    assert_error_shape(api.get(f"/api/v1/runs/compare/?a={2**63}&b={run.pk}"), 400)


# --- dates ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["since", "until"])
@pytest.mark.parametrize("value", ["2026-13-45", "2026-02-30", "yesterday"])
def test_a_date_that_is_not_one_answers_the_audit_page_at_400_saying_so(
    world, admin_page, admin_user, name, value
):
    response = admin_page.get("/governance/audit/", {name: value})
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="filter-error"' in body and f"{name}: &#x27;{value}&#x27; is not a date" in body
    assert "No entries match." in body
    exports = AuditEntry.objects.filter(action="governance.audit.export").count()
    assert admin_page.get("/governance/audit/export.csv", {name: value}).status_code == 400
    assert AuditEntry.objects.filter(action="governance.audit.export").count() == exports
    api = assert_error_shape(api_client(admin_user).get("/api/v1/audit/", {name: value}), 400)
    assert api["field"] == name


def test_a_real_date_still_filters_the_audit_page(world, admin_page):
    response = admin_page.get("/governance/audit/", {"since": "2000-01-01", "until": "2999-12-31"})
    assert response.status_code == 200 and 'id="filter-error"' not in response.content.decode()


def test_an_admin_list_filtered_on_a_foreign_key_past_int64_is_400_not_500(client, db):
    # Django bounds integer columns in lookups, not foreign keys: on SQLite the query itself
    # raised OverflowError (a 500); PostgreSQL can be asked, and finds nothing.
    from django.db import connection

    from tests.support import factories

    client.force_login(factories.user("root", is_superuser=True))
    response = client.get(f"/admin/evaluations/trial/?run={2**63}")
    if connection.vendor == "sqlite":
        assert response.status_code == 400
        assert "out of range" in response.content.decode()
    else:
        assert response.status_code == 200


def test_a_json_body_naming_a_member_twice_is_refused_with_its_name(client, db):
    from tests.support import factories

    client.force_login(factories.user("root", is_superuser=True))
    response = client.post(
        "/api/v1/agents/",
        data='{"slug": "a", "slug": "b", "name": "x"}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "duplicate member 'slug'" in response.json()["detail"]


def test_a_json_body_with_a_lone_surrogate_is_refused_and_a_pair_is_kept(client, db):
    # "\ud800" alone parses to no text: PostgreSQL answered a 500, SQLite saved what no export
    # could write back. A surrogate pair is one character and is fine.
    from tests.support import factories

    client.force_login(factories.user("root", is_superuser=True))
    refused = client.post(
        "/api/v1/agents/",
        data='{"slug": "s", "name": "bad \\ud800 name"}',
        content_type="application/json",
    )
    assert refused.status_code == 400
    assert "lone surrogate" in refused.json()["detail"]
    kept = client.post(
        "/api/v1/agents/",
        data='{"slug": "s", "name": "face \\ud83d\\ude00"}',
        content_type="application/json",
    )
    assert kept.status_code == 201, kept.content
    assert kept.json()["name"] == "face \U0001f600"
