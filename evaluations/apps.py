from django.apps import AppConfig


class EvaluationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluations"

    def ready(self):
        from evaluations import system_checks  # noqa: F401  (registers the start-up checks)
