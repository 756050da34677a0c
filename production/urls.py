from django.urls import path

from production import views

app_name = "production"
urlpatterns = [
    path("", views.production_index, name="index"),
    path("agents/<slug:slug>/", views.production_page, name="agent"),
    path("agents/<slug:slug>/online-rule/", views.online_rule_page, name="online-rule"),
    path("proposals/<int:pk>/<slug:verb>/", views.proposal_verb, name="proposal-verb"),
]
