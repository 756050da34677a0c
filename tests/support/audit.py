"""Playing a database-level attacker in the audit tests: the append-only triggers dropped, then
the log cut, rewritten, or rewritten and re-hashed so the chain holds again."""

from django.db import connection

from governance.models import AuditEntry


def drop_audit_trigger():
    """Drop the triggers that make `governance_auditentry` append-only (SQLite or PostgreSQL)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "DROP TRIGGER governance_auditentry_append_only ON governance_auditentry"
            )
        else:
            cursor.execute("DROP TRIGGER governance_auditentry_no_update")
            cursor.execute("DROP TRIGGER governance_auditentry_no_delete")


def cut_tail(from_sequence):
    """Delete entry `from_sequence` and every later one (the triggers must be dropped)."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM governance_auditentry WHERE sequence >= %s", [from_sequence])


def rewrite_entry(sequence, reason):
    """Change an entry's reason and leave its hash alone (the triggers must be dropped)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE governance_auditentry SET reason = %s WHERE sequence = %s", [reason, sequence]
        )


def recompute_chain(from_sequence):
    """Re-hash entry `from_sequence` and every later one, each on its predecessor, as an attacker
    who knows the (public) hashing would: `verify_chain` finds nothing afterwards."""
    previous = (
        AuditEntry.objects.filter(sequence__lt=from_sequence)
        .order_by("-sequence")
        .values_list("hash", flat=True)
        .first()
    )
    for entry in AuditEntry.objects.filter(sequence__gte=from_sequence).order_by("sequence"):
        if previous is not None:
            entry.prev_hash = previous
        entry.hash = entry.compute_hash()
        AuditEntry.objects.filter(pk=entry.pk).update(prev_hash=entry.prev_hash, hash=entry.hash)
        previous = entry.hash


AUDIT_KEY = "a-test-audit-key-kept-outside-the-database"


def use_checkpoints(settings, directory):
    """Turn checkpoints on for a test: the key and a checkpoint file in `directory`."""
    settings.SHERLOCK_AUDIT_KEY = AUDIT_KEY
    settings.SHERLOCK_AUDIT_CHECKPOINT_FILE = directory / "checkpoints.jsonl"
    return settings.SHERLOCK_AUDIT_CHECKPOINT_FILE
