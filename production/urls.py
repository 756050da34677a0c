from django.urls import path

from production import online_views, views

app_name = "production"
urlpatterns = [
    path("", online_views.production_index, name="index"),
    path("agents/<slug:slug>/", online_views.production_page, name="agent"),
    path("agents/<slug:slug>/online-rule/", online_views.online_rule_page, name="online-rule"),
    path("proposals/<int:pk>/<slug:verb>/", online_views.proposal_verb, name="proposal-verb"),
    path("traces/", views.trace_list, name="trace-list"),
    path("labels/", views.label_queue, name="labels"),
    path("agents/<slug:slug>/session/", views.session_detail, name="session"),
    path("traces/<int:pk>/", views.trace_detail, name="trace-detail"),
    path("traces/<int:pk>/add-to-dataset/", views.add_to_dataset, name="add-to-dataset"),
]
