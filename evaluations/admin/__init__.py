"""The evaluations admin, one module per group of pages: datasets, versions, cases and checks
(`datasets`), runs and their records (`runs`), schedules (`schedules`); what they share
(`base`), the case forms (`forms`), cases as files (`cases_io`), the served docs (`docs`) and
starting a run (`start_run`). Importing this package registers every page."""

from evaluations.admin import datasets, runs, schedules  # noqa: F401 - registers the pages
from evaluations.admin.schedules import RunScheduleAdmin

__all__ = ["RunScheduleAdmin"]
