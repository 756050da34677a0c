"""Top-level URLs: the sign-in pages, the admin, the API under /api/v1/ with its schema and docs,
the htmx pages, the pickers' answers (`/pick/<kind>/`, sherlock.core.pickers), and
/favicon.ico (browsers ask for it on every page; it leads to the static icon).

One way in for every role: the admin's login and logout lead to Sherlock's sign-in and sign-out
(allauth's account views in Sherlock's templates, `/accounts/`), so the admin never shows its
"staff account" login; someone signed in with no role the admin uses gets a 403 page saying so
there (governance.views.sign_in), not a redirect back and forth. The OIDC callback is
Sherlock's (governance.sso.views), at allauth's path.
"""

from allauth.account.views import LogoutView
from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from governance.sso import views as sso_views
from governance.views import attestations as attestation_views
from governance.views import sign_in as sign_in_views
from sherlock.core import pickers

# The admin's header, its pages' <title>s and its index say Sherlock, not "Django
# administration".
admin.site.site_header = "Sherlock"
admin.site.site_title = "Sherlock admin"
admin.site.index_title = "Sherlock administration"

urlpatterns = [
    path("favicon.ico", RedirectView.as_view(url=static("sherlock/favicon.svg"), permanent=False)),
    path("admin/login/", sign_in_views.admin_login, name="admin-login-redirect"),
    path("admin/logout/", LogoutView.as_view(), name="admin-logout"),
    path("admin/", admin.site.urls),
    path("accounts/oidc/<str:provider_id>/login/callback/", sso_views.callback),
    path("accounts/", include("allauth.urls")),
    path("people/", include("governance.views.people_urls")),
    path("pick/<slug:kind>/", pickers.answer, name="pick"),
    path(
        ".well-known/sherlock/attestation-keys.json",
        attestation_views.attestation_keys,
        name="attestation-keys",
    ),
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
