from django.urls import path
from rest_framework.routers import DefaultRouter

from production.api.online import AgentProductionViewSet, RollbackProposalViewSet
from production.api.otlp import OTLPTracesView
from production.api.traces import TraceViewSet

router = DefaultRouter()
# Shares the `agents` prefix with agents.api: only the detail verbs are routed here.
router.register("agents", AgentProductionViewSet, basename="agent-production")
router.register("rollback-proposals", RollbackProposalViewSet, basename="rollbackproposal")
router.register("traces", TraceViewSet, basename="trace")

urlpatterns = [
    path("v1/traces", OTLPTracesView.as_view(), name="otlp-traces"),
    *router.urls,
]
