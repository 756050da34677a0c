from django.urls import path

from production.api.views import OTLPTracesView

urlpatterns = [
    path("v1/traces", OTLPTracesView.as_view(), name="otlp-traces"),
]
