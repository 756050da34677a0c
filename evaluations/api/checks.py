"""API for the checks of a draft dataset version and the check preview ("try a check before
adding it"); datasets, cases and labels have their own modules.

Every write goes through an action (permission, validation, audit); every list starts from
`Dataset.objects.for_user`, so a user who may not see a dataset gets 404 for its objects.
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.actions.create_check import CreateCheck
from evaluations.actions.delete_check import DeleteCheck
from evaluations.actions.update_check import UpdateCheck
from evaluations.api.datasets import draft_version_for_write
from evaluations.api.serializers import (
    CalibrationSerializer,
    CheckSerializer,
    PreviewInputSerializer,
    PreviewOutputSerializer,
    visible_versions,
)
from evaluations.checks import ParamsError, UnknownCheckKind, evaluate, validate_params
from evaluations.checks.scoring import check_status
from evaluations.judge import get_default_judge
from evaluations.judge.setup import preview_warning
from evaluations.models import Check, Dataset
from evaluations.reads.calibration import calibration_of
from sherlock.core.audit import audit
from sherlock.core.errors import ActionDenied, ActionInvalid

# --- serializers ---------------------------------------------------------------------------


# --- views ---------------------------------------------------------------------------------


class CheckViewSet(viewsets.ModelViewSet):
    """Checks of dataset versions. Params are validated against the kind's schema on save: a bad
    params document answers 400 naming the field, and nothing is saved."""

    serializer_class = CheckSerializer
    filterset_fields = ["dataset_version", "kind", "mode"]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return Check.objects.filter(
            dataset_version__in=visible_versions(self.request.user)
        ).order_by("dataset_version", "position", "label")

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        version = draft_version_for_write(self.request, data.pop("dataset_version"))
        serializer.instance = CreateCheck(
            acting_user=self.request.user, dataset_version=version, **data
        ).execute()

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("dataset_version", None)
        serializer.instance = UpdateCheck(
            acting_user=self.request.user, check=serializer.instance, **data
        ).execute()

    def perform_destroy(self, instance):
        DeleteCheck(acting_user=self.request.user, check=instance).execute()

    @extend_schema(responses={200: CalibrationSerializer})
    @action(detail=True, methods=["get"])
    def calibration(self, request, pk=None):
        check = self.get_object()
        calibration = calibration_of(check)
        return Response(
            CalibrationSerializer(
                {
                    "check_id": check.pk,
                    "label": check.label,
                    "requires_calibration": check.requires_calibration,
                    "calibrated": calibration.calibrated,
                    "reason": calibration.reason,
                    "old_labels": calibration.old_labels,
                    **calibration.agreement.as_dict(),
                }
            ).data
        )


def may_preview(user):
    """A preview may spend judge money: only users who work with datasets may ask for one (the
    API's preview and the admin's check form both ask)."""
    return user.has_perm("evaluations.view_check") or Dataset.objects.for_user(user).exists()


def preview_check(kind, params, case, transcript, threshold=None):
    """Score one check on one case and transcript without saving anything: what
    `POST /api/v1/checks/preview/` answers and the admin's check form shows. Bad input raises
    ActionInvalid naming its field (`kind`, `params.<path>`, `case`, `transcript`)."""
    try:
        params = validate_params(kind, params)
    except ParamsError as exc:
        raise ActionInvalid(str(exc), field=f"params.{exc.field}") from None
    except UnknownCheckKind as exc:
        raise ActionInvalid(str(exc), field="kind") from None
    for name, value in (("case", case), ("transcript", transcript)):
        if not isinstance(value, dict):
            raise ActionInvalid(f"{name} must be a JSON object", field=name)

    verdict = evaluate(kind, params, case, transcript, judge=get_default_judge())
    return {
        "warning": preview_warning(kind),
        "kind": kind,
        "score": verdict.score,
        "status": str(check_status(verdict.score, verdict.outcome, threshold)),
        "reason": verdict.reason,
        "evidence": verdict.evidence,
        "params": params,
    }


class CheckPreviewView(APIView):
    """Score one check on one case and transcript without saving anything (docs/checks.md)."""

    @extend_schema(
        request=PreviewInputSerializer,
        responses={200: PreviewOutputSerializer, 400: OpenApiResponse(description="bad input")},
    )
    def post(self, request):
        if not may_preview(request.user):
            # No action runs a preview, so the view records its refusal as an action's would
            # be (`<app>.<noun>.refused`): every refusal is audited.
            denied = ActionDenied("You may not preview checks (no dataset role).")
            audit(
                "evaluations.check.refused",
                actor=request.user,
                after={"verb": "preview", "code": denied.code},
                reason=str(denied),
            )
            raise denied
        body = PreviewInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        result = preview_check(
            data["kind"], data["params"], data["case"], data["transcript"], data.get("threshold")
        )
        return Response(PreviewOutputSerializer(result).data)
