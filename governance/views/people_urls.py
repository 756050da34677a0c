"""The People pages under /people/ (governance.views.people)."""

from django.urls import path

from governance.views import people as views

app_name = "people"
urlpatterns = [
    path("", views.people_page, name="people"),
    path("sso/", views.sso_page, name="sso"),
    path("join/<str:token>/", views.join_page, name="join"),
    path("<int:pk>/", views.person_page, name="person"),
    path("<int:pk>/<slug:verb>/", views.person_verb, name="person-verb"),
]
