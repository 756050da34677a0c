from rest_framework.routers import DefaultRouter

from agents.api.views import AgentVersionViewSet, AgentViewSet

router = DefaultRouter()
router.register("agents", AgentViewSet, basename="agent")
router.register("versions", AgentVersionViewSet, basename="agentversion")
urlpatterns = router.urls
