from django.urls import path

from evaluations.views import compare as views_compare
from evaluations.views import labels as views_labels
from evaluations.views import runs as views
from evaluations.views import schedules as views_schedules
from evaluations.views import start_run as views_runs
from evaluations.views import summaries as views_summaries
from evaluations.views import trends as views_trends

app_name = "evaluations"
urlpatterns = [
    path("", views.home, name="home"),
    path("runs/", views.run_list, name="run-list"),
    path("runs/start/", views_runs.start_run, name="start-run"),
    path("runs/compare/", views_compare.compare, name="compare"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/summary/", views_summaries.summarize, name="run-summary"),
    path("runs/<int:pk>/cases/<slug:key>/", views.trial_detail, name="trial-detail"),
    path("trends/", views_trends.trends, name="trends"),
    path("costs/", views.costs, name="costs"),
    path("labels/", views_labels.labels, name="labels"),
    path("checks/<int:pk>/calibration/", views_labels.calibration, name="calibration"),
    path("schedules/", views_schedules.schedules, name="schedules"),
    path(
        "schedules/<int:pk>/<str:verb>/",
        views_schedules.schedule_change,
        name="schedule-change",
    ),
]
