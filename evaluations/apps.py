from django.apps import AppConfig


class EvaluationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluations"

    def ready(self):
        from django.db.models.signals import post_delete
        from django_q.signals import post_spawn

        from evaluations import (
            pickers,  # noqa: F401  (registers the dataset and run pickers)
            system_checks,  # noqa: F401  (registers the start-up checks)
        )
        from evaluations.actions.fire_schedule import drop_q_schedule
        from evaluations.engine import reap_on_worker_start
        from evaluations.models import RunSchedule

        # Each django-q2 worker process reaps once when it starts (evaluations.engine.reaper).
        post_spawn.connect(reap_on_worker_start, dispatch_uid="sherlock-reap-on-worker-start")
        # A schedule's django-q2 row goes with it, a cascade included.
        post_delete.connect(drop_q_schedule, sender=RunSchedule, dispatch_uid="sherlock-q-row")
