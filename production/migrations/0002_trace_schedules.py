"""The django-q2 schedules of production traces: every minute the sweep decides the traces
whose quiescence window passed (`production.tasks.sweep_traces`), and every day the retention
task deletes traces past `SHERLOCK_TRACE_RETENTION_DAYS` (`production.tasks.delete_old_traces`).
Data migrations like the reaper's (evaluations 0004): exactly one schedule each, however many
workers start."""

from django.db import migrations

SCHEDULES = {
    "sherlock-trace-sweep": {"func": "production.tasks.sweep_traces", "minutes": 1},
    "sherlock-trace-retention": {"func": "production.tasks.delete_old_traces", "minutes": 1440},
}


def schedule(apps, schema_editor):
    model = apps.get_model("django_q", "Schedule")
    for name, spec in SCHEDULES.items():
        model.objects.update_or_create(
            name=name, defaults={**spec, "schedule_type": "I", "repeats": -1}
        )


def unschedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name__in=SCHEDULES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("production", "0001_traces_and_spans"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(schedule, unschedule)]
