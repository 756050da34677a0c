"""Exporting the audit log is one verb (`ExportAudit`) behind the admin, the page and the
command: who may, who may not (refused and recorded), and the one download it answers."""

import io
import json

import pytest
from django.urls import reverse

from governance.actions.export_audit import ExportAudit
from governance.models import AuditEntry
from sherlock.core.audit import audit
from sherlock.core.errors import ActionDenied, ActionInvalid
from tests.support import factories


@pytest.fixture
def entries(db):
    for n in range(3):
        audit("governance.policy.create", after={"n": n})
    return AuditEntry.objects.all()


@pytest.mark.parametrize("role", ["Viewer", "Editor", "Builder", "Publisher"])
def test_only_an_admin_exports_and_a_refusal_is_recorded(entries, role):
    user = factories.user(f"{role.lower()}-x", role=role)
    out = io.StringIO()
    with pytest.raises(ActionDenied):
        ExportAudit(acting_user=user, entries=entries, fmt="jsonl", out=out, reason="t").execute()
    assert out.getvalue() == ""
    refusal = AuditEntry.objects.get(action="governance.audit.refused")
    assert refusal.actor_id == user.pk and refusal.after["verb"] == "export"


def test_an_admin_and_the_operator_export_each_entry_once_recorded(entries):
    admin = factories.user("root-admin", role="Admin")
    counts = []
    for user in (admin, None):
        out = io.StringIO()
        count = ExportAudit(
            acting_user=user, entries=entries, fmt="jsonl", out=out, reason="t"
        ).execute()
        assert count == len(out.getvalue().splitlines()) >= 3
        counts.append(count)
    exports = AuditEntry.objects.filter(action="governance.audit.export").order_by("pk")
    assert [e.actor_id for e in exports] == [admin.pk, None]
    assert [e.after["entries"] for e in exports] == counts


def test_an_unknown_format_is_refused_before_anything_is_written(entries):
    admin = factories.user("root-admin", role="Admin")
    with pytest.raises(ActionInvalid):
        ExportAudit(
            acting_user=admin, entries=entries, fmt="xml", out=io.StringIO(), reason="t"
        ).execute()
    assert not AuditEntry.objects.filter(action="governance.audit.export").exists()


def test_the_admin_and_the_page_answer_the_same_download(client, entries):
    admin = factories.user("root-admin", role="Admin")
    client.force_login(admin)
    page = client.get(reverse("governance:audit-export", args=["jsonl"]))
    changelist = reverse("admin:governance_auditentry_changelist")
    ids = [str(pk) for pk in entries.values_list("pk", flat=True)]
    action = client.post(changelist, {"action": "export_jsonl", "_selected_action": ids})
    for response in (page, action):
        assert response["Content-Type"] == "application/jsonl; charset=utf-8"
        assert response["Content-Disposition"].startswith('attachment; filename="audit-')
        rows = [json.loads(line) for line in response.content.decode().splitlines()]
        assert [row["action"] for row in rows].count("governance.policy.create") == 3


def test_the_command_reads_any_iso_offset_in_utc_and_refuses_a_bad_time(entries):
    from django.core.management import CommandError, call_command

    out = io.StringIO()
    # +23:10 is ISO 8601 and beyond what PostgreSQL takes: compared in UTC, it is a filter.
    call_command("export_audit", since="2000-01-01T23:10:00+23:10", stdout=out)
    assert len(out.getvalue().splitlines()) == AuditEntry.objects.count() - 1  # not its own
    for bad in ("yesterday", "0001-01-01T00:00:00+05:00"):
        with pytest.raises(CommandError, match="--until"):
            call_command("export_audit", until=bad, stdout=io.StringIO())
