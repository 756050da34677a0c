from django.urls import path

from evaluations import views

app_name = "evaluations"
urlpatterns = [
    path("", views.home, name="home"),
]
