from rest_framework.routers import DefaultRouter

from agents.api.agents import AgentViewSet
from agents.api.versions import AgentVersionViewSet

router = DefaultRouter()
router.register("agents", AgentViewSet, basename="agent")
router.register("versions", AgentVersionViewSet, basename="agentversion")
urlpatterns = router.urls
