"""API for datasets, their versions, cases and checks, hand labels, calibration and the check
preview ("try a check before adding it").

Every write goes through an action (permission, validation, audit); every list starts from
`Dataset.objects.for_user`, so a user who may not see a dataset gets 404 for its objects.
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.actions._case_fields import CASE_FIELDS
from evaluations.actions._check_fields import CHECK_FIELDS
from evaluations.actions.create_case import CreateCase
from evaluations.actions.create_check import CreateCheck
from evaluations.actions.create_dataset import DATASET_FIELDS, CreateDataset
from evaluations.actions.create_draft_dataset_version import CreateDraftDatasetVersion
from evaluations.actions.delete_check import DeleteCheck
from evaluations.actions.freeze_dataset_version import FreezeDatasetVersion
from evaluations.actions.label_check_result import LabelCheckResult
from evaluations.actions.remove_case import RemoveCase
from evaluations.actions.update_case import UpdateCase
from evaluations.actions.update_check import UpdateCheck
from evaluations.calibration import calibration_of
from evaluations.checks import REGISTRY, ParamsError, UnknownCheckKind, evaluate, validate_params
from evaluations.choices import CheckMode
from evaluations.models import CaseVersion, Check, CheckResult, Dataset, DatasetVersion
from evaluations.scoring import check_status
from sherlock.core.api import RefuseUnknownFields
from sherlock.core.audit import audit
from sherlock.core.errors import ActionDenied, ActionInvalid
from sherlock.core.hidden import VisiblePrimaryKeyRelatedField, visible_or_404
from sherlock.core.limits import (
    CASE_FIELD_MAX_BYTES,
    DESCRIPTION_MAX,
    JSON_MAX_DEPTH,
    NOTE_MAX,
    PARAMS_MAX_BYTES,
)

# --- serializers ---------------------------------------------------------------------------


class DatasetSerializer(RefuseUnknownFields, serializers.ModelSerializer):
    owner = serializers.StringRelatedField(allow_null=True)

    class Meta:
        model = Dataset
        fields = ["id", *DATASET_FIELDS, "owner", "created_at"]
        read_only_fields = ["id", "owner", "created_at"]
        validators = []  # the slug's uniqueness is the action's to check (admin and API alike)
        extra_kwargs = {"slug": {"validators": []}, "description": {"max_length": DESCRIPTION_MAX}}


class DatasetVersionSerializer(serializers.ModelSerializer):
    dataset = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    frozen_by = serializers.StringRelatedField(allow_null=True)

    class Meta:
        model = DatasetVersion
        fields = ["id", "dataset", "number", "note", "created_at", "frozen_at", "frozen_by"]


class NoteSerializer(RefuseUnknownFields, serializers.Serializer):
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=NOTE_MAX)


class NamesVisibleVersion:
    """An input naming `dataset_version` among the versions the caller may see: a hidden one
    answers the same 400 "does not exist" as a missing one (and is audited), so the answer
    never tells a hidden version from a missing one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")  # absent when the schema generator builds it
        if request is not None:
            self.fields["dataset_version"].queryset = visible_versions(request.user)


class CheckSerializer(NamesVisibleVersion, RefuseUnknownFields, serializers.ModelSerializer):
    dataset_version = VisiblePrimaryKeyRelatedField(queryset=DatasetVersion.objects.none())
    kind = serializers.ChoiceField(choices=sorted(REGISTRY))
    mode = serializers.ChoiceField(choices=CheckMode.choices, default=CheckMode.BLOCKING)

    class Meta:
        model = Check
        fields = ["id", "dataset_version", *CHECK_FIELDS]
        read_only_fields = ["id"]
        # Uniqueness and params are the action's to check (one place for admin, API, commands).
        validators = []
        extra_kwargs = {
            "params": {
                "help_text": f"Checked against the kind's schema; at most {PARAMS_MAX_BYTES} "
                f"bytes of JSON, {JSON_MAX_DEPTH} levels deep."
            }
        }


class CaseSerializer(NamesVisibleVersion, RefuseUnknownFields, serializers.ModelSerializer):
    dataset_version = VisiblePrimaryKeyRelatedField(queryset=DatasetVersion.objects.none())
    key = serializers.SlugField(source="case.key")

    class Meta:
        model = CaseVersion
        fields = ["id", "dataset_version", "key", *CASE_FIELDS]
        validators = []
        extra_kwargs = {
            name: {
                "help_text": f"At most {CASE_FIELD_MAX_BYTES} bytes of JSON "
                f"({PARAMS_MAX_BYTES} for overrides), {JSON_MAX_DEPTH} levels deep."
            }
            for name in CASE_FIELDS
        }


class PreviewInputSerializer(RefuseUnknownFields, serializers.Serializer):
    kind = serializers.ChoiceField(choices=sorted(REGISTRY))
    params = serializers.JSONField(required=False, default=dict)
    case = serializers.JSONField(required=False, default=dict)
    transcript = serializers.JSONField()
    threshold = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)


class PreviewOutputSerializer(serializers.Serializer):
    kind = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    status = serializers.CharField()
    reason = serializers.CharField()
    evidence = serializers.JSONField()
    params = serializers.JSONField()


class LabelInputSerializer(RefuseUnknownFields, serializers.Serializer):
    passed = serializers.BooleanField(required=False, allow_null=True, default=None)
    score = serializers.FloatField(required=False, allow_null=True, default=None)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=NOTE_MAX)


class CalibrationSerializer(serializers.Serializer):
    check_id = serializers.IntegerField()
    label = serializers.CharField()
    requires_calibration = serializers.BooleanField()
    calibrated = serializers.BooleanField()
    reason = serializers.CharField(allow_blank=True)
    n = serializers.IntegerField()
    kappa = serializers.FloatField(allow_null=True)
    kappa95 = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="95 % interval of kappa."
    )
    old_labels = serializers.IntegerField(help_text="Labels given under an earlier version.")
    confusion = serializers.DictField(child=serializers.IntegerField())
    excluded = serializers.IntegerField()


# --- views ---------------------------------------------------------------------------------


def visible_versions(user):
    return DatasetVersion.objects.filter(dataset__in=Dataset.objects.for_user(user))


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
    from evaluations.judge import get_default_judge

    verdict = evaluate(kind, params, case, transcript, judge=get_default_judge())
    return {
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
            # be (`<app>.<noun>.refused`): every refusal is audited (issue 22).
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
