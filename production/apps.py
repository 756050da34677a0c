from django.apps import AppConfig


class ProductionConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "production"

    def ready(self):
        # Production's labels of a dataset check's results count toward its calibration.
        from evaluations.reads import calibration
        from production.online.labels import labels_of_checks

        if labels_of_checks not in calibration.LABEL_SOURCES:
            calibration.LABEL_SOURCES.append(labels_of_checks)
