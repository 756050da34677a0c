from rest_framework.routers import DefaultRouter

from governance.api.people import PeopleViewSet
from governance.api.views import (
    AgentGateDatasetsViewSet,
    APIKeyViewSet,
    AuditEntryViewSet,
    BypassViewSet,
    PolicyViewSet,
    PublishRequestViewSet,
    RoleGrantViewSet,
    VersionVerbViewSet,
)

router = DefaultRouter()
# Shares the `versions` prefix with agents.api: only the detail verbs are routed here.
router.register("versions", VersionVerbViewSet, basename="version-verb")
# Shares the `agents` prefix with agents.api: only the gate datasets of an agent are here.
router.register("agents", AgentGateDatasetsViewSet, basename="agent-gate-datasets")
router.register("publish-requests", PublishRequestViewSet, basename="publishrequest")
router.register("bypasses", BypassViewSet, basename="bypass")
router.register("audit", AuditEntryViewSet, basename="auditentry")
router.register("policies", PolicyViewSet, basename="policy")
router.register("role-grants", RoleGrantViewSet, basename="rolegrant")
router.register("api-keys", APIKeyViewSet, basename="apikey")
router.register("people", PeopleViewSet, basename="person")
urlpatterns = router.urls
