from rest_framework.routers import DefaultRouter

from governance.api.api_keys import APIKeyViewSet
from governance.api.audit import AuditEntryViewSet
from governance.api.bypasses import BypassViewSet
from governance.api.gate_datasets import AgentGateDatasetsViewSet
from governance.api.people import PeopleViewSet
from governance.api.policies import PolicyViewSet
from governance.api.publish_requests import PublishRequestViewSet
from governance.api.role_grants import RoleGrantViewSet
from governance.api.versions import VersionVerbViewSet

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
