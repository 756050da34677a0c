"""The API router: each app contributes its routes from `<app>/api/urls.py`."""

from django.urls import include, path

urlpatterns = [
    path("", include("agents.api.urls")),
    path("", include("evaluations.api.urls")),
    path("", include("governance.api.urls")),
    path("", include("production.api.urls")),
]
