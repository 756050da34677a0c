"""Routes of the evaluations API. Each resource lives in its own module of this package
(`datasets.py`, `cases.py`, `checks.py`, `labels.py`, `runs.py`, `compare.py`, ...; their
serializers in `serializers.py` where more than one module shares them) and registers here."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from evaluations.api import (
    case_results,
    cases,
    cases_io,
    checks,
    client_runs,
    compare,
    datasets,
    labels,
    runs,
    schedules,
    trials,
)

router = DefaultRouter()
router.register("datasets", datasets.DatasetViewSet, basename="dataset")
router.register("dataset-versions", datasets.DatasetVersionViewSet, basename="datasetversion")
router.register("checks", checks.CheckViewSet, basename="check")
router.register("cases", cases.CaseViewSet, basename="case")
router.register("check-results", labels.CheckResultLabelViewSet, basename="checkresult")
router.register("runs", runs.RunViewSet, basename="run")
router.register("trials", trials.TrialViewSet, basename="trial")
router.register("case-results", case_results.CaseResultViewSet, basename="caseresult")
router.register("schedules", schedules.ScheduleViewSet, basename="schedule")

urlpatterns = [
    # Before the router, or `checks/<pk>/` would swallow "preview".
    path("checks/preview/", checks.CheckPreviewView.as_view(), name="check-preview"),
    # Before the router too, or `runs/<pk>/` would swallow "compare".
    path("runs/compare/", compare.RunComparisonView.as_view(), name="run-compare"),
    path("runs/client/", client_runs.ClientRunStartView.as_view(), name="run-client"),
    # A dataset's cases as files, and its versions compared (by slug, beside the router's
    # `datasets/<pk>/`).
    path(
        "datasets/<slug:slug>/draft/import/",
        cases_io.CasesImportView.as_view(),
        name="dataset-import",
    ),
    path("datasets/<slug:slug>/export/", cases_io.CasesExportView.as_view(), name="dataset-export"),
    path("datasets/<slug:slug>/diff/", cases_io.DatasetDiffView.as_view(), name="dataset-diff"),
]
urlpatterns += router.urls
