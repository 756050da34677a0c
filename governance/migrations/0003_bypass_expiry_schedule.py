"""The django-q2 schedule that expires bypasses: every minute, a requested or approved bypass
past its expiry becomes `expired` (`governance.tasks.expire_bypasses`).

Bypasses also expire when they are touched (`ExpireBypass` in each verb's `prepare()`), which
is what enforces the expiry; this schedule makes the stored state true for readers too, within
a minute. A data migration, like the reaper's (evaluations 0004): `migrate` runs once per
deployment, so exactly one schedule exists however many workers start.
"""

from django.db import migrations

NAME = "sherlock-bypass-expiry"
FUNC = "governance.tasks.expire_bypasses"


def schedule_expiry(apps, schema_editor):
    schedule = apps.get_model("django_q", "Schedule")
    schedule.objects.update_or_create(
        name=NAME,
        defaults={"func": FUNC, "schedule_type": "I", "minutes": 1, "repeats": -1},
    )


def unschedule_expiry(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0002_roles_and_audit_trigger"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(schedule_expiry, unschedule_expiry)]
