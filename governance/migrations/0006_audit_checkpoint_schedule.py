"""The django-q2 schedule that checkpoints the audit chain: every minute the task
`governance.tasks.write_audit_checkpoint` signs the head when it moved and the last checkpoint
is `SHERLOCK_AUDIT_CHECKPOINT_MINUTES` old (the interval is read by the task, so changing it
needs no migration). Without `SHERLOCK_AUDIT_KEY` the tick does nothing. A data migration like
the bypass expiry's (0003): exactly one schedule however many workers start.
"""

from django.db import migrations

NAME = "sherlock-audit-checkpoint"
FUNC = "governance.tasks.write_audit_checkpoint"


def schedule_checkpoints(apps, schema_editor):
    schedule = apps.get_model("django_q", "Schedule")
    schedule.objects.update_or_create(
        name=NAME,
        defaults={"func": FUNC, "schedule_type": "I", "minutes": 1, "repeats": -1},
    )


def unschedule_checkpoints(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0005_webhooks"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(schedule_checkpoints, unschedule_checkpoints)]
