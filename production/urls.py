from django.urls import path

from production.views import online, traces

app_name = "production"
urlpatterns = [
    path("", online.production_index, name="index"),
    path("agents/<slug:slug>/", online.production_page, name="agent"),
    path("agents/<slug:slug>/online-rule/", online.online_rule_page, name="online-rule"),
    path("proposals/<int:pk>/<slug:verb>/", online.proposal_verb, name="proposal-verb"),
    path("traces/", traces.trace_list, name="trace-list"),
    path("labels/", traces.label_queue, name="labels"),
    path("agents/<slug:slug>/session/", traces.session_detail, name="session"),
    path("traces/<int:pk>/", traces.trace_detail, name="trace-detail"),
    path("traces/<int:pk>/add-to-dataset/", traces.add_to_dataset, name="add-to-dataset"),
]
