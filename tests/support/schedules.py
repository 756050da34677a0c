"""What the schedule tests share: the django-q2 rows schedules own, a check, and
creating a schedule through its action (the `pair` fixture is in tests/evaluations/conftest.py)."""

from django_q.models import Schedule

from evaluations.actions.create_schedule import CreateSchedule


def OWNED():
    """The django-q2 rows schedules own (the reaper's row is there too)."""
    return Schedule.objects.filter(func="evaluations.tasks.run_schedule")


SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}


def create(user, pair, **fields):
    agent, _, dataset, _ = pair
    return CreateSchedule(
        acting_user=user,
        **{"agent": agent, "dataset": dataset, "interval_minutes": 60, **fields},
    ).execute()
