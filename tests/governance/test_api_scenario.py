"""The release scenario, end to end through the API with one token per role, and the real run
engine (django-q2 in sync mode): a Builder's draft is evaluated and blocked; publishing and
bypass attempts by the wrong people are refused (403, or 404 for who may not see the agent);
an Admin's bypass needs a reason and a second Admin; the Publisher then publishes it, and the
audit log tells the whole story, its chain intact until someone tampers with a row."""

import pytest
from django.core.management import call_command
from django.db import connection

from governance.models import AuditEntry
from tests.support import factories
from tests.support.governance import REASON, api_client, grant_on


@pytest.fixture
def team(db, agent, other_agent, builder, publisher, admin_user, outsider):
    second_admin = factories.user("second-admin", role="Admin")
    scoped_admin = grant_on(factories.user("other-admin"), "Admin", other_agent)
    scoped_publisher = grant_on(factories.user("other-publisher"), "Publisher", other_agent)
    users = {
        "builder": builder,
        "publisher": publisher,
        "admin": admin_user,
        "second_admin": second_admin,
        "other_admin": scoped_admin,
        "other_publisher": scoped_publisher,
        "outsider": outsider,
    }
    return {name: api_client(user) for name, user in users.items()}


def test_the_release_scenario_through_the_api(
    team, policy, agent, django_capture_on_commit_callbacks, capsys
):
    policy.bypass_requires_second_admin = True
    policy.save(update_fields=["bypass_requires_second_admin"])

    # A Builder adds a draft that never calls the tools its cases expect, and asks to publish.
    draft = team["builder"].post(
        "/api/v1/versions/",
        {
            "agent": "support-bot",
            "adapter": "python",
            "config": {"callable": "tests.support.agents_under_test.scripted"},
        },
        format="json",
    )
    assert draft.status_code == 201, draft.json()
    version = draft.json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        requested = team["builder"].post(f"/api/v1/versions/{version}/request-publication/")
    assert requested.status_code == 201, requested.json()
    request_url = f"/api/v1/publish-requests/{requested.json()['id']}/"

    # The gate runs ran; the decision is blocked and shows every gate.
    decided = team["builder"].get(request_url).json()
    assert decided["state"] == "blocked", decided["decision"]
    assert decided["runs"][0]["status"] == "completed"
    assert decided["decision"]["release"] == "fail"
    assert decided["decision"]["first_failing_gate"]
    assert {g["name"] for g in decided["decision"]["gates"]} >= {"coverage", "case_pass_rate"}

    # Nobody publishes a blocked version; Publishers and Builders cannot bypass.
    publish_url = f"/api/v1/versions/{version}/publish/"
    assert team["publisher"].post(publish_url).status_code == 409
    bypass_url = f"{request_url}bypass/"
    for who in ("publisher", "builder"):
        refused = team[who].post(bypass_url, {"reason": REASON})
        assert (refused.status_code, refused.json()["code"]) == (403, "bypass_denied")
    for who in ("other_admin", "other_publisher", "outsider"):
        assert team[who].post(bypass_url, {"reason": REASON}).status_code == 404
        assert team[who].post(publish_url).status_code == 404

    # An Admin must give a reason, and a real one.
    assert team["admin"].post(bypass_url).status_code == 400
    assert team["admin"].post(bypass_url, {"reason": "x" * 40}).status_code == 400
    bypass = team["admin"].post(bypass_url, {"reason": REASON})
    assert (bypass.status_code, bypass.json()["state"]) == (201, "requested")
    approve_url = f"/api/v1/bypasses/{bypass.json()['id']}/approve/"

    # Not approved yet; the requester may not approve it; a second Admin does.
    assert team["publisher"].post(publish_url).status_code == 409
    same = team["admin"].post(approve_url)
    assert (same.status_code, same.json()["code"]) == (403, "same_admin")
    approved = team["second_admin"].post(approve_url)
    assert (approved.status_code, approved.json()["state"]) == (200, "approved")

    # The Publisher publishes; the bypass is spent.
    published = team["publisher"].post(publish_url, {"reason": "customers waiting"})
    assert published.status_code == 200, published.json()
    assert (published.json()["state"], published.json()["is_live"]) == ("published", True)
    assert team["builder"].get(request_url).json()["state"] == "bypassed"
    assert team["publisher"].post(publish_url).status_code == 409

    # The audit log, for Admins only, tells the story in order.
    assert team["publisher"].get("/api/v1/audit/").status_code == 403
    story = team["admin"].get("/api/v1/audit/", {"action_prefix": "governance.bypass."}).json()
    assert [(e["action"], e["actor"]) for e in reversed(story["results"])] == [
        ("governance.bypass.refused", "publisher"),
        ("governance.bypass.refused", "builder"),
        ("governance.bypass.refused", "admin"),
        ("governance.bypass.refused", "admin"),
        ("governance.bypass.request", "admin"),
        ("governance.bypass.refused", "admin"),
        ("governance.bypass.approve", "second-admin"),
        ("governance.bypass.use", "publisher"),
    ]
    publish = team["admin"].get("/api/v1/audit/", {"action": "governance.version.publish"})
    entry = publish.json()["results"][0]
    assert (entry["actor"], entry["after"]["cleared_by"]) == ("publisher", "bypass")
    assert entry["request_id"] and entry["ip"] == "127.0.0.1"

    # The chain holds, until a row is rewritten behind the trigger's back.
    call_command("verify_audit")
    assert f"{AuditEntry.objects.count()} entries checked" in capsys.readouterr().out
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "DROP TRIGGER governance_auditentry_append_only ON governance_auditentry"
            )
        else:
            cursor.execute("DROP TRIGGER governance_auditentry_no_update")
        cursor.execute(
            "UPDATE governance_auditentry SET reason = 'nothing to see' WHERE sequence = %s",
            [entry["sequence"]],
        )
    with pytest.raises(SystemExit) as failed:
        call_command("verify_audit")
    assert failed.value.code == 1
    assert f"broken at sequence {entry['sequence']}" in capsys.readouterr().err
