"""`create_api_token` prints a working token; `export_audit` writes the log as CSV or JSONL."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from governance.models import AuditEntry
from sherlock.core.audit import audit


def run(*args):
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_api_token_prints_a_token_that_authenticates(admin_user):
    key = run("create_api_token", "admin").strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/v1/audit/").status_code == 200
    assert run("create_api_token", "admin").strip() == key  # the same token again
    created = AuditEntry.objects.get(action="auth.token.create")
    assert created.target_id == str(admin_user.pk) and key not in created.canonical()


def test_create_api_token_can_rotate_and_refuses_unknown_users(admin_user):
    first = run("create_api_token", "admin").strip()
    assert run("create_api_token", "admin", "--rotate").strip() != first
    with pytest.raises(CommandError):
        call_command("create_api_token", "nobody")


@pytest.fixture
def entries(admin_user, publisher):
    audit("governance.test.one", actor=admin_user, after={"n": 1}, reason="first, with a comma")
    audit("governance.test.two", actor=publisher, before={"n": 1}, after={"n": 2})


def test_export_audit_writes_json_lines_with_the_hashes(entries):
    lines = [
        json.loads(line)
        for line in run("export_audit", "--action", "governance.test.").splitlines()
    ]
    assert [e["action"] for e in lines] == ["governance.test.one", "governance.test.two"]
    stored = AuditEntry.objects.get(action="governance.test.two")
    assert lines[1]["hash"] == stored.hash and lines[1]["before"] == {"n": 1}


def test_export_audit_writes_csv_filtered_by_actor(entries, tmp_path):
    target = tmp_path / "audit.csv"
    call_command("export_audit", "--format", "csv", "--actor", "admin", "--output", str(target))
    rows = list(csv.DictReader(target.open(encoding="utf-8")))
    assert [r["action"] for r in rows] == ["governance.test.one"]
    assert rows[0]["reason"] == "first, with a comma"
    assert json.loads(rows[0]["after"]) == {"n": 1}


def test_exporting_is_itself_audited(entries):
    run("export_audit", "--format", "csv")
    assert AuditEntry.objects.filter(action="governance.audit.export").exists()
