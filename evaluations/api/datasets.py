"""API for datasets and their versions: list, create, start a draft, freeze. Every list starts from
`Dataset.objects.for_user`, so a user who may not see a dataset gets 404 for its objects."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from evaluations.actions.create_dataset import CreateDataset
from evaluations.actions.create_draft_dataset_version import CreateDraftDatasetVersion
from evaluations.actions.freeze_dataset_version import FreezeDatasetVersion
from evaluations.api.serializers import (
    DatasetSerializer,
    DatasetVersionSerializer,
    NoteSerializer,
    visible_versions,
)
from evaluations.models import Dataset
from sherlock.core.hidden import visible_or_404


def draft_version_for_write(request, version_id):
    """The dataset version a write targets, or 404 when the user may not see it (audited)."""
    return visible_or_404(
        request, visible_versions(request.user), pk=getattr(version_id, "pk", version_id)
    )


class DatasetViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Datasets the user may see; `POST` creates one owned by the caller (`CreateDataset`, as
    the admin does)."""

    serializer_class = DatasetSerializer
    filterset_fields = ["slug"]

    def get_queryset(self):
        return Dataset.objects.for_user(self.request.user).select_related("owner").order_by("slug")

    def perform_create(self, serializer):
        serializer.instance = CreateDataset(
            acting_user=self.request.user, **serializer.validated_data
        ).execute()


class DatasetVersionViewSet(viewsets.ReadOnlyModelViewSet):
    """Dataset versions; `POST .../draft/` starts a draft, `POST .../{id}/freeze/` freezes it."""

    serializer_class = DatasetVersionSerializer
    filterset_fields = ["dataset", "number"]

    def get_queryset(self):
        return (
            visible_versions(self.request.user)
            .select_related("dataset", "frozen_by")
            .order_by("dataset__slug", "-number")
        )

    @extend_schema(request=NoteSerializer, responses={200: DatasetVersionSerializer})
    @action(detail=True, methods=["post"])
    def freeze(self, request, pk=None):
        version = self.get_object()
        body = NoteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        frozen = FreezeDatasetVersion(
            acting_user=request.user, dataset_version=version, note=body.validated_data["note"]
        ).execute()
        return Response(DatasetVersionSerializer(frozen).data)

    @extend_schema(request=NoteSerializer, responses={201: DatasetVersionSerializer})
    @action(detail=False, methods=["post"], url_path=r"draft/(?P<dataset_slug>[-\w]+)")
    def draft(self, request, dataset_slug=None):
        dataset = visible_or_404(request, Dataset.objects.for_user(request.user), slug=dataset_slug)
        body = NoteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        draft = CreateDraftDatasetVersion(
            acting_user=request.user, dataset=dataset, note=body.validated_data["note"]
        ).execute()
        return Response(DatasetVersionSerializer(draft).data, status=status.HTTP_201_CREATED)
