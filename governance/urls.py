from django.urls import path

from governance.views import attestations as views_attestations
from governance.views import audit as views_audit
from governance.views import publish as views
from governance.views import versions as views_versions

app_name = "governance"
urlpatterns = [
    path("versions/", views_versions.versions_page, name="versions"),
    path("versions/<int:pk>/", views.publish_page, name="publish"),
    path("versions/<int:pk>/bypass/", views.request_bypass, name="request-bypass"),
    path(
        "versions/<int:pk>/attestations/<int:attestation>.intoto.json",
        views_attestations.attestation_file,
        name="attestation-file",
    ),
    path("versions/<int:pk>/<slug:verb>/", views.version_verb, name="version-verb"),
    path("bypasses/<int:pk>/<slug:verb>/", views.bypass_verb, name="bypass-verb"),
    path("audit/", views_audit.audit_page, name="audit"),
    path("audit/verify/", views_audit.audit_verify, name="audit-verify"),
    path("audit/export.<slug:fmt>", views_audit.audit_export, name="audit-export"),
]
