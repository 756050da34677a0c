"""Routes of the evaluations API. Each resource lives in its own module of this package
(`checks.py`, `runs.py`, `compare.py`, ...) and registers here."""

from rest_framework.routers import DefaultRouter

router = DefaultRouter()
urlpatterns = []
urlpatterns += router.urls
