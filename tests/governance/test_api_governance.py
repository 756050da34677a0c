"""The governance API: each verb through DRF with token authentication, for every persona of the
role matrix (allowed -> 2xx, visible but not allowed -> 403 with the reason, not visible -> 404),
409 when the state forbids it, the decision with every gate, the Admin-only audit log, and
constant query counts on the lists."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.choices import VersionState
from governance.actions.publish_version import PublishVersion
from governance.actions.request_bypass import RequestBypass
from governance.choices import BypassState
from governance.models import AuditEntry
from tests.support import factories
from tests.support.governance import (
    ADMINS,
    BUILDERS,
    PERSONAS,
    PUBLISHERS,
    REASON,
    api_client,
    assert_refusal_audited,
    finish_gate_runs,
    make_version,
    persona_id,
    used_client,
)

matrix = pytest.mark.parametrize("role,scope", PERSONAS, ids=persona_id)


def expected(role, scope, allowed, success):
    """2xx for the allowed; 403 for who sees the agent but may not act; 404 for the rest."""
    if (role, scope) in allowed:
        return success
    sees_agent = scope == "global" or (scope == "here" and role != "Editor")
    return 403 if sees_agent else 404


@matrix
def test_request_publication_through_the_api(role, scope, persona, good_version, policy):
    user = persona(role, scope)
    response = api_client(user).post(f"/api/v1/versions/{good_version.pk}/request-publication/")
    assert response.status_code == expected(role, scope, BUILDERS, 201), response.json()
    if response.status_code == 201:
        assert response.json()["state"] == "evaluating"
        assert len(response.json()["runs"]) == 1
    assert good_version.publish_requests.exists() == (response.status_code == 201)
    assert_refusal_audited(
        user,
        response.status_code,
        target_type="agents.agentversion",
        target_id=good_version.pk,
        verb="request_publication",
        noun="request",
    )


@matrix
def test_publish_through_the_api(role, scope, persona, passed_request, good_version):
    user = persona(role, scope)
    response = api_client(user).post(f"/api/v1/versions/{good_version.pk}/publish/")
    assert response.status_code == expected(role, scope, PUBLISHERS, 200), response.json()
    good_version.refresh_from_db()
    published = good_version.state == VersionState.PUBLISHED
    assert published == (response.status_code == 200)
    if response.status_code == 403:
        assert response.json()["code"] == "permission_denied"
        assert "Publisher role needed" in response.json()["detail"]
    assert_refusal_audited(
        user,
        response.status_code,
        target_type="agents.agentversion",
        target_id=good_version.pk,
        verb="publish",
        noun="version",
    )


@matrix
def test_bypass_through_the_api(role, scope, persona, blocked_request):
    user = persona(role, scope)
    response = api_client(user).post(
        f"/api/v1/publish-requests/{blocked_request.pk}/bypass/", {"reason": REASON}
    )
    assert response.status_code == expected(role, scope, ADMINS, 201), response.json()
    assert blocked_request.bypasses.exists() == (response.status_code == 201)
    assert_refusal_audited(
        user,
        response.status_code,
        target_type="governance.publishrequest",
        target_id=blocked_request.pk,
        verb="bypass",
        noun="bypass",
    )


@matrix
def test_approve_a_bypass_through_the_api(role, scope, persona, pending_bypass):
    user = persona(role, scope)
    response = api_client(user).post(f"/api/v1/bypasses/{pending_bypass.pk}/approve/")
    assert response.status_code == expected(role, scope, ADMINS, 200), response.json()
    pending_bypass.refresh_from_db()
    approved = pending_bypass.state == BypassState.APPROVED
    assert approved == (response.status_code == 200)
    assert_refusal_audited(
        user,
        response.status_code,
        target_type="governance.bypass",
        target_id=pending_bypass.pk,
        verb="approve",
        noun="bypass",
    )


@pytest.mark.parametrize("verb", ["deny", "revoke"])
def test_an_admin_denies_or_revokes_a_bypass_through_the_api(verb, pending_bypass, db):
    other = factories.user("other-admin", role="Admin")
    response = api_client(other).post(
        f"/api/v1/bypasses/{pending_bypass.pk}/{verb}/", {"reason": "no"}
    )
    assert response.status_code == 200
    assert response.json()["state"] == {"deny": "denied", "revoke": "revoked"}[verb]


def test_publishing_a_blocked_version_answers_409_with_the_reason(
    publisher, blocked_request, bad_version
):
    response = api_client(publisher).post(f"/api/v1/versions/{bad_version.pk}/publish/")
    assert response.status_code == 409
    assert response.json()["code"] == "blocked"
    assert "false_success" in response.json()["detail"]


def test_publishing_twice_answers_409(publisher, passed_request, good_version):
    client = api_client(publisher)
    assert client.post(f"/api/v1/versions/{good_version.pk}/publish/").status_code == 200
    again = client.post(f"/api/v1/versions/{good_version.pk}/publish/")
    assert (again.status_code, again.json()["code"]) == (409, "already_published")


def test_asking_again_while_a_decision_waits_must_name_it(builder, passed_request, good_version):
    client = api_client(builder)
    url = f"/api/v1/versions/{good_version.pk}/request-publication/"
    refused = client.post(url)
    assert (refused.status_code, refused.json()["code"]) == (409, "already_decided")
    assert f"supersede={passed_request.pk}" in refused.json()["detail"]
    wrong = client.post(url, {"supersede": passed_request.pk + 1}, format="json")
    assert (wrong.status_code, wrong.json()["code"]) == (409, "supersede_mismatch")
    bad = client.post(url, {"supersede": "three"}, format="json")
    assert (bad.status_code, bad.json()["field"]) == (400, "supersede")
    assert good_version.publish_requests.count() == 1

    again = client.post(url, {"supersede": passed_request.pk}, format="json")
    assert (again.status_code, again.json()["state"]) == (201, "evaluating")
    passed_request.refresh_from_db()
    assert passed_request.state == "superseded"


def test_a_bypass_without_a_reason_answers_400_and_is_audited(admin_user, blocked_request):
    response = api_client(admin_user).post(f"/api/v1/publish-requests/{blocked_request.pk}/bypass/")
    assert response.status_code == 400
    assert response.json()["field"] == "reason"
    assert AuditEntry.objects.get(action="governance.bypass.refused").after["code"] == "invalid"


def test_retire_and_rollback_through_the_api(publisher, author, passed_request, good_version):
    client = api_client(publisher)
    client.post(f"/api/v1/versions/{good_version.pk}/publish/")
    retired = client.post(f"/api/v1/versions/{good_version.pk}/retire/", {"reason": "incident"})
    assert (retired.status_code, retired.json()["state"]) == (200, "retired")
    again = api_client(publisher).post(f"/api/v1/versions/{good_version.pk}/request-publication/")
    assert again.status_code == 201
    finish_gate_runs(good_version.publish_requests.get(pk=again.json()["id"]))
    back = client.post(f"/api/v1/versions/{good_version.pk}/rollback/")
    assert (back.status_code, back.json()["state"], back.json()["is_live"]) == (
        200,
        "published",
        True,
    )


def test_the_publish_request_shows_the_decision_with_every_gate(builder, blocked_request):
    body = api_client(builder).get(f"/api/v1/publish-requests/{blocked_request.pk}/").json()
    assert body["state"] == "blocked"
    assert body["decision"]["first_failing_gate"] == "false_success"
    gates = {g["name"]: g for g in body["decision"]["gates"]}
    assert gates["false_success"]["value"]["num"] == 2
    assert gates["false_success"]["threshold"] == {"max": 0}
    assert body["policy"]["version"] == 1 and body["runs"][0]["status"] == "completed"


def test_a_user_who_may_not_see_the_agent_gets_404_for_its_requests(
    outsider, persona, blocked_request
):
    for user in (outsider, persona("Publisher", "other")):
        client = api_client(user)
        assert client.get(f"/api/v1/publish-requests/{blocked_request.pk}/").status_code == 404
        assert client.get("/api/v1/publish-requests/").json()["count"] == 0


def test_lists_take_a_constant_number_of_queries(
    django_assert_num_queries, admin_user, author, agent, evaluate, blocked_request
):
    client = api_client(admin_user)

    def count(url):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        return len(queries)

    urls = ["/api/v1/publish-requests/", "/api/v1/bypasses/", "/api/v1/audit/"]
    client.get(urls[0])  # the key's first use records its last_used_at: not the list's cost
    RequestBypass(acting_user=admin_user, publish_request=blocked_request, reason=REASON).execute()
    before = [count(url) for url in urls]
    for _ in range(3):
        request = evaluate(make_version(agent, author, good=False), author, passed=False)
        RequestBypass(acting_user=admin_user, publish_request=request, reason=REASON).execute()
    for url, queries in zip(urls, before, strict=True):
        with django_assert_num_queries(queries):
            client.get(url)


# --- the audit log ------------------------------------------------------------------------------


@matrix
def test_only_admins_read_the_audit_log(role, scope, persona):
    response = api_client(persona(role, scope)).get("/api/v1/audit/")
    assert response.status_code == (200 if (role, scope) == ("Admin", "global") else 403)


def test_the_audit_log_filters_by_actor_action_target_type_and_date(
    admin_user, publisher, passed_request, good_version
):
    PublishVersion(acting_user=publisher, agent_version=good_version).execute()
    client = api_client(admin_user)
    published = client.get("/api/v1/audit/", {"actor": "publisher"}).json()["results"]
    assert [e["action"] for e in published] == ["governance.version.publish"]
    by_prefix = client.get("/api/v1/audit/", {"action_prefix": "governance.request."}).json()
    assert {e["action"] for e in by_prefix["results"]} == {
        "governance.request.create",
        "governance.request.decide",
    }
    versions = client.get("/api/v1/audit/", {"target_type": "agents.agentversion"}).json()
    assert {e["target_id"] for e in versions["results"]} == {str(good_version.pk)}
    entry = AuditEntry.objects.get(action="governance.version.publish")
    window = {"since": entry.at.isoformat(), "until": entry.at.isoformat()}
    assert [e["sequence"] for e in client.get("/api/v1/audit/", window).json()["results"]] == [
        entry.sequence
    ]
    published = client.get("/api/v1/audit/", {"action": "governance.version.publish"}).json()
    assert len(published["results"]) == 1 and published["next"] is None


def test_an_audit_entry_in_the_api_has_the_exports_fields_with_the_actor_by_name(
    admin_user, passed_request
):
    entry = api_client(admin_user).get("/api/v1/audit/").json()["results"][-1]
    assert list(entry) == [
        "sequence",
        "at",
        "actor",
        "action",
        "target_type",
        "target_id",
        "target_repr",
        "before",
        "after",
        "reason",
        "request_id",
        "ip",
        "prev_hash",
        "hash",
    ]


def append_entries(count):
    for number in range(count):
        AuditEntry.objects.append(
            "evaluations.case.update", target=("evaluations.case", number, "")
        )


def test_the_audit_log_pages_by_cursor_without_gaps_or_repeats(admin_user):
    append_entries(120)
    client = api_client(admin_user)
    page = client.get("/api/v1/audit/").json()
    assert "count" not in page and len(page["results"]) == 50
    seen = []
    while True:
        seen += [e["sequence"] for e in page["results"]]
        if not page["next"]:
            break
        page = client.get(page["next"]).json()
    expected = list(AuditEntry.objects.order_by("-sequence").values_list("sequence", flat=True))
    assert seen == expected and len(seen) >= 120


def test_the_audit_list_and_detail_cost_the_same_queries_for_a_short_log_or_a_long_one(
    admin_user, django_assert_num_queries
):
    def count(url):
        client = api_client(admin_user)
        client.get(url)  # the process's content-type cache
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        return len(queries)

    append_entries(3)
    newest = AuditEntry.objects.order_by("-sequence").first().sequence
    # A key this process verified a moment ago: its re-check, the page or entry; no COUNT of
    # the log.
    assert (count("/api/v1/audit/"), count(f"/api/v1/audit/{newest}/")) == (2, 2)
    append_entries(150)
    deep = api_client(admin_user).get("/api/v1/audit/").json()["next"]
    for url in ("/api/v1/audit/", deep, f"/api/v1/audit/{newest}/"):
        client = used_client(admin_user)
        # A key's first read: token + user, the user's and groups' permissions (the Admin's
        # right), the page or entry.
        with django_assert_num_queries(4):
            assert client.get(url).status_code == 200
        with django_assert_num_queries(2):
            assert client.get(url).status_code == 200
