"""`create_api_token` prints a working, hashed, expiring key; `export_audit` writes the log as
CSV or JSONL."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from governance.models import APIKey, AuditEntry
from sherlock.core.audit import audit
from sherlock.core.csv_cells import restore_cell
from tests.support.governance import key_client


def run(*args):
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_api_token_prints_a_key_that_authenticates_and_is_stored_hashed(admin_user):
    key = run("create_api_token", "admin").strip()
    assert key_client(key).get("/api/v1/audit/").status_code == 200
    stored = APIKey.objects.get(user=admin_user)
    assert key not in (stored.pk, stored.hashed_key) and stored.prefix == key.split(".")[0]
    assert run("create_api_token", "admin").strip() != key  # a new key each time, never shown again
    created = AuditEntry.objects.filter(action="governance.apikey.create").first()
    assert created.target_id == str(admin_user.pk) and key not in created.canonical()
    assert created.reason == "manage.py create_api_token"


def test_create_api_token_expires_by_default_and_refuses_more_than_the_maximum(
    admin_user, settings
):
    settings.SHERLOCK_API_KEY_DAYS, settings.SHERLOCK_API_KEY_MAX_DAYS = 10, 20
    run("create_api_token", "admin", "--name", "ci")
    key = APIKey.objects.get(name="ci")
    assert 9 < (key.expiry_date - key.created).total_seconds() / 86400 <= 10
    with pytest.raises(CommandError, match="1 to 20 days"):
        call_command("create_api_token", "admin", "--days", "21")


def test_create_api_token_can_rotate_and_refuses_unknown_users(admin_user):
    first = run("create_api_token", "admin").strip()
    second = run("create_api_token", "admin", "--rotate").strip()
    assert second != first
    assert key_client(first).get("/api/v1/audit/").status_code == 401
    assert key_client(second).get("/api/v1/audit/").status_code == 200
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


def test_export_audit_csv_neutralises_cells_a_spreadsheet_would_run(admin_user, tmp_path):
    audit("governance.test.one", actor=admin_user, reason='=HYPERLINK("http://x.example")')
    audit("governance.test.two", actor=admin_user, reason="'=already quoted")
    target = tmp_path / "audit.csv"

    call_command("export_audit", "--format", "csv", "--output", str(target))

    rows = list(csv.DictReader(target.open(encoding="utf-8")))
    reasons = [r["reason"] for r in rows if r["action"].startswith("governance.test.")]
    assert reasons == ['\'=HYPERLINK("http://x.example")', "''=already quoted"]
    # restore_cell undoes it exactly: the entry's hash re-computes from the restored cells.
    stored = AuditEntry.objects.get(action="governance.test.two")
    assert restore_cell(reasons[1]) == stored.reason


def test_export_audit_json_lines_are_written_as_stored(admin_user):
    audit("governance.test.one", actor=admin_user, reason="=1+1")
    (line,) = [
        json.loads(x) for x in run("export_audit", "--action", "governance.test.").splitlines()
    ]
    assert line["reason"] == "=1+1"
