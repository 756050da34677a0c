"""Top-level URLs: the admin, the API under /api/v1/ with its schema and docs, the htmx pages."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("sherlock.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("governance/", include("governance.urls")),
    path("production/", include("production.urls")),
    path("", include("evaluations.urls")),
]

# Unrouted /api/ paths answer in the API's error shape, not Django's HTML page.
handler404 = "sherlock.core.api.errors.not_found"
handler500 = "sherlock.core.api.errors.server_error"
