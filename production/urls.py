from django.urls import path

from production import views

app_name = "production"
urlpatterns = [
    path("traces/", views.trace_list, name="trace-list"),
    path("traces/<int:pk>/", views.trace_detail, name="trace-detail"),
    path("traces/<int:pk>/add-to-dataset/", views.add_to_dataset, name="add-to-dataset"),
]
