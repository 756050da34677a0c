"""Top-level URLs: the admin, the API under /api/v1/ with its schema and docs, the htmx pages,
and /favicon.ico (browsers ask for it on every page; it leads to the static icon)."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

# The admin's header, its pages' <title>s and its index say Sherlock, not "Django
# administration" (issue 24).
admin.site.site_header = "Sherlock"
admin.site.site_title = "Sherlock admin"
admin.site.index_title = "Sherlock administration"

urlpatterns = [
    path("favicon.ico", RedirectView.as_view(url=static("sherlock/favicon.svg"), permanent=False)),
    path("admin/", admin.site.urls),
    path("api/v1/", include("sherlock.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("governance/", include("governance.urls")),
    path("", include("evaluations.urls")),
]

# Unrouted /api/ paths answer in the API's error shape, not Django's HTML page.
handler404 = "sherlock.core.api.errors.not_found"
handler500 = "sherlock.core.api.errors.server_error"
