from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "governance"

    def ready(self):
        from governance import receivers, system_checks  # noqa: F401  (registers the checks)

        receivers.connect()
