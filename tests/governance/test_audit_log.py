"""The audit log is append-only (database trigger) and hash-chained (verify_audit)."""

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from governance.models import AuditEntry
from sherlock.core.audit import audit, request_context
from tests.support.audit import drop_audit_trigger


@pytest.fixture
def three_entries(admin_user):
    with request_context(request_id="req-1", ip="10.0.0.7"):
        return [
            audit("governance.test.one", actor=admin_user, after={"n": 1}),
            audit(
                "governance.test.two",
                actor=admin_user,
                before={"n": 1},
                after={"n": 2},
                reason="because",
            ),
            audit("governance.test.three", actor=None, target=("agents.agent", 7, "bot")),
        ]


def test_entries_are_chained_by_hash(three_entries):
    one, two, three = three_entries
    assert [e.sequence for e in three_entries] == [one.sequence, one.sequence + 1, one.sequence + 2]
    first = AuditEntry.objects.order_by("sequence").first()
    assert first.prev_hash == "0" * 64
    assert two.prev_hash == one.hash
    assert three.prev_hash == two.hash
    assert two.request_id == "req-1" and two.ip == "10.0.0.7"
    stored = AuditEntry.objects.get(sequence=two.sequence)
    assert stored.compute_hash() == stored.hash


def test_update_through_the_orm_is_rejected_by_the_database(three_entries):
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEntry.objects.filter(pk=three_entries[1].pk).update(reason="rewritten")
    assert AuditEntry.objects.get(pk=three_entries[1].pk).reason == "because"


def test_delete_is_rejected_by_the_database(three_entries):
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEntry.objects.filter(pk=three_entries[0].pk).delete()
    assert AuditEntry.objects.filter(pk=three_entries[0].pk).exists()


def test_raw_sql_update_is_rejected_by_the_database(three_entries):
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE governance_auditentry SET reason = 'x' WHERE sequence = %s",
            [three_entries[1].sequence],
        )


def test_verify_audit_reports_an_intact_chain(three_entries, capsys):
    call_command("verify_audit")
    assert f"{AuditEntry.objects.count()} entries checked" in capsys.readouterr().out


def test_verify_audit_names_the_tampered_row(three_entries, capsys):
    # Someone with database access drops the trigger and rewrites history: the chain shows it.
    # (DDL is transactional on both databases, so the test's rollback restores the trigger.)
    two = three_entries[1]
    drop_audit_trigger()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE governance_auditentry SET reason = 'nothing' WHERE sequence = %s",
            [two.sequence],
        )
    with pytest.raises(SystemExit) as exit_info:
        call_command("verify_audit")
    assert exit_info.value.code == 1
    assert f"broken at sequence {two.sequence}" in capsys.readouterr().err


def test_verify_audit_names_a_deleted_row(three_entries, capsys):
    two = three_entries[1]
    drop_audit_trigger()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM governance_auditentry WHERE sequence = %s", [two.sequence])
    with pytest.raises(SystemExit):
        call_command("verify_audit")
    assert f"broken at sequence {two.sequence}" in capsys.readouterr().err
