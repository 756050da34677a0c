"""Playing a database-level attacker in the audit tests: the append-only triggers dropped."""

from django.db import connection


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
