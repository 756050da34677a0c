"""API for the cases of a draft dataset version: every write goes through the case actions."""

from rest_framework import viewsets

from evaluations.actions.create_case import CreateCase
from evaluations.actions.remove_case import RemoveCase
from evaluations.actions.update_case import UpdateCase
from evaluations.api.datasets import draft_version_for_write
from evaluations.api.serializers import CaseSerializer, visible_versions
from evaluations.models import CaseVersion


class CaseViewSet(viewsets.ModelViewSet):
    """Cases of dataset versions (their content in that version)."""

    serializer_class = CaseSerializer
    filterset_fields = ["dataset_version"]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return (
            CaseVersion.objects.filter(dataset_version__in=visible_versions(self.request.user))
            .select_related("case")
            .order_by("dataset_version", "case__key")
        )

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        version = draft_version_for_write(self.request, data.pop("dataset_version"))
        key = data.pop("case")["key"]
        serializer.instance = CreateCase(
            acting_user=self.request.user, dataset_version=version, key=key, **data
        ).execute()

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("dataset_version", None)
        data.pop("case", None)
        serializer.instance = UpdateCase(
            acting_user=self.request.user, case_version=serializer.instance, **data
        ).execute()

    def perform_destroy(self, instance):
        RemoveCase(acting_user=self.request.user, case_version=instance).execute()
