"""Routes of the evaluations API. Each resource lives in its own module of this package
(`checks.py`, `runs.py`, `compare.py`, ...) and registers here."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from evaluations.api import cases_io, checks, compare, runs, schedules, trials

router = DefaultRouter()
router.register("datasets", checks.DatasetViewSet, basename="dataset")
router.register("dataset-versions", checks.DatasetVersionViewSet, basename="datasetversion")
router.register("checks", checks.CheckViewSet, basename="check")
router.register("cases", checks.CaseViewSet, basename="case")
router.register("check-results", checks.CheckResultLabelViewSet, basename="checkresult")
router.register("runs", runs.RunViewSet, basename="run")
router.register("trials", trials.TrialViewSet, basename="trial")
router.register("schedules", schedules.ScheduleViewSet, basename="schedule")

urlpatterns = [
    # Before the router, or `checks/<pk>/` would swallow "preview".
    path("checks/preview/", checks.CheckPreviewView.as_view(), name="check-preview"),
    # Before the router too, or `runs/<pk>/` would swallow "compare".
    path("runs/compare/", compare.RunComparisonView.as_view(), name="run-compare"),
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
