"""The four role groups with their permissions, and the append-only trigger on the audit log."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

TABLE = "governance_auditentry"

SQLITE_UP = [
    f"CREATE TRIGGER IF NOT EXISTS {TABLE}_no_update BEFORE UPDATE ON {TABLE} "
    "BEGIN SELECT RAISE(ABORT, 'audit entries are append-only'); END",
    f"CREATE TRIGGER IF NOT EXISTS {TABLE}_no_delete BEFORE DELETE ON {TABLE} "
    "BEGIN SELECT RAISE(ABORT, 'audit entries are append-only'); END",
]
SQLITE_DOWN = [f"DROP TRIGGER IF EXISTS {TABLE}_no_update", f"DROP TRIGGER IF EXISTS {TABLE}_no_delete"]

POSTGRES_UP = [
    "CREATE OR REPLACE FUNCTION sherlock_audit_append_only() RETURNS trigger AS $$ "
    "BEGIN RAISE EXCEPTION 'audit entries are append-only'; END; $$ LANGUAGE plpgsql",
    f"DROP TRIGGER IF EXISTS {TABLE}_append_only ON {TABLE}",
    f"CREATE TRIGGER {TABLE}_append_only BEFORE UPDATE OR DELETE ON {TABLE} "
    "FOR EACH ROW EXECUTE FUNCTION sherlock_audit_append_only()",
]
POSTGRES_DOWN = [f"DROP TRIGGER IF EXISTS {TABLE}_append_only ON {TABLE}"]


def _run(schema_editor, statements):
    for sql in statements:
        schema_editor.execute(sql)


def install_trigger(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    _run(schema_editor, POSTGRES_UP if vendor == "postgresql" else SQLITE_UP)


def remove_trigger(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    _run(schema_editor, POSTGRES_DOWN if vendor == "postgresql" else SQLITE_DOWN)


def create_roles(apps, schema_editor):
    from governance.people.roles import sync_role_groups

    # Permissions are normally created after all migrations (post_migrate); the groups need
    # them now, so create them for every installed app first.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    sync_role_groups(apps)


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(
        name__in=["Editor", "Builder", "Publisher", "Admin"]
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0001_initial"),
        ("agents", "0001_initial"),
        ("evaluations", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.RunPython(install_trigger, remove_trigger),
        migrations.RunPython(create_roles, remove_roles),
    ]
