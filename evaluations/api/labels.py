"""API for hand labels on model-check results, and a check's calibration against them."""

from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from evaluations.actions.label_check_result import LabelCheckResult
from evaluations.api.serializers import LabelInputSerializer, visible_versions
from evaluations.models import CheckResult


class CheckResultLabelViewSet(viewsets.GenericViewSet):
    """Hand labels of check results (calibration)."""

    serializer_class = LabelInputSerializer

    def get_queryset(self):
        return CheckResult.objects.filter(
            check_config__dataset_version__in=visible_versions(self.request.user)
        ).select_related("check_config__dataset_version__dataset")

    @extend_schema(request=LabelInputSerializer, responses={201: LabelInputSerializer})
    @action(detail=True, methods=["post"])
    def label(self, request, pk=None):
        result = self.get_object()
        body = LabelInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        LabelCheckResult(
            acting_user=request.user, check_result=result, **body.validated_data
        ).execute()
        return Response(body.validated_data, status=status.HTTP_201_CREATED)
