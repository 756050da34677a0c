"""The reaper's django-q2 schedule: every minute, hand back what dead workers left behind.

A data migration rather than a start-up step: `migrate` runs once per deployment, so exactly
one schedule exists however many workers start (a start-up step in each worker would race to
create it). Workers also reap once when they start (`evaluations.apps`), so a restarted
cluster does not wait for the schedule's next tick.
"""

from django.db import migrations

NAME = "sherlock-reaper"
FUNC = "evaluations.tasks.reap_expired_leases"


def schedule_reaper(apps, schema_editor):
    schedule = apps.get_model("django_q", "Schedule")
    schedule.objects.update_or_create(
        name=NAME,
        defaults={"func": FUNC, "schedule_type": "I", "minutes": 1, "repeats": -1},
    )


def unschedule_reaper(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("evaluations", "0003_run_progress_and_reaper"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(schedule_reaper, unschedule_reaper)]
