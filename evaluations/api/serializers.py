"""The serializers of the datasets, versions, checks, cases, labels, calibration and check preview
endpoints (`evaluations.api.datasets`, `checks`, `cases`, `labels`). Writes go through actions:
an input serializer validates the shape, the action the rules."""

from typing import Any

from rest_framework import serializers

from evaluations.actions.case_fields import CASE_FIELDS
from evaluations.actions.check_fields import CHECK_FIELDS
from evaluations.actions.create_dataset import DATASET_FIELDS
from evaluations.checks import REGISTRY
from evaluations.choices import CheckMode, LabelSource
from evaluations.judge.setup import check_warning
from evaluations.models import CaseVersion, Check, Dataset, DatasetVersion
from sherlock.core.api.serializers import RefuseUnknownFields
from sherlock.core.hidden import VisiblePrimaryKeyRelatedField
from sherlock.core.limits import (
    CASE_FIELD_MAX_BYTES,
    DESCRIPTION_MAX,
    JSON_MAX_DEPTH,
    NOTE_MAX,
    PARAMS_MAX_BYTES,
)

# The check kinds, one enum in the schema (`CheckKindEnum`).
CHECK_KINDS = sorted(REGISTRY)


class DatasetSerializer(RefuseUnknownFields, serializers.ModelSerializer):
    owner = serializers.StringRelatedField(allow_null=True)

    class Meta:
        model = Dataset
        fields = ["id", *DATASET_FIELDS, "owner", "created_at"]
        read_only_fields = ["id", "owner", "created_at"]
        # The slug's uniqueness is the action's to check (admin and API alike).
        validators: list[Any] = []
        extra_kwargs = {"slug": {"validators": []}, "description": {"max_length": DESCRIPTION_MAX}}


class DatasetVersionSerializer(serializers.ModelSerializer):
    dataset = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    frozen_by = serializers.StringRelatedField(allow_null=True)

    class Meta:
        model = DatasetVersion
        fields = ["id", "dataset", "number", "note", "created_at", "frozen_at", "frozen_by"]


class NoteSerializer(RefuseUnknownFields, serializers.Serializer):
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=NOTE_MAX)


class NamesVisibleVersion(serializers.Serializer):
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
    kind = serializers.ChoiceField(choices=CHECK_KINDS)
    mode = serializers.ChoiceField(choices=CheckMode.choices, default=CheckMode.BLOCKING)
    warnings = serializers.SerializerMethodField(
        help_text="A blocking model check with no judge configured: it will be skipped, and why"
    )

    class Meta:
        model = Check
        fields = ["id", "dataset_version", *CHECK_FIELDS, "warnings"]
        read_only_fields = ["id", "warnings"]
        # Uniqueness and params are the action's to check (one place for admin, API, commands).
        validators: list[Any] = []
        extra_kwargs = {
            "params": {
                "help_text": f"Checked against the kind's schema; at most {PARAMS_MAX_BYTES} "
                f"bytes of JSON, {JSON_MAX_DEPTH} levels deep."
            }
        }

    def get_warnings(self, check) -> list[str]:

        warning = check_warning(check)
        return [warning] if warning else []


class CaseSerializer(NamesVisibleVersion, RefuseUnknownFields, serializers.ModelSerializer):
    dataset_version = VisiblePrimaryKeyRelatedField(queryset=DatasetVersion.objects.none())
    key = serializers.SlugField(source="case.key")

    class Meta:
        model = CaseVersion
        fields = ["id", "dataset_version", "key", *CASE_FIELDS]
        validators: list[Any] = []
        extra_kwargs = {
            name: {
                "help_text": f"At most {CASE_FIELD_MAX_BYTES} bytes of JSON "
                f"({PARAMS_MAX_BYTES} for overrides), {JSON_MAX_DEPTH} levels deep."
            }
            for name in CASE_FIELDS
        }


class PreviewInputSerializer(RefuseUnknownFields, serializers.Serializer):
    kind = serializers.ChoiceField(choices=CHECK_KINDS)
    params = serializers.JSONField(required=False, default=dict)
    case = serializers.JSONField(required=False, default=dict)
    transcript = serializers.JSONField()
    threshold = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)


class PreviewOutputSerializer(serializers.Serializer):
    warning = serializers.CharField(
        allow_blank=True,
        help_text="Why a model check was skipped (no judge configured) and what to set; or ''",
    )
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
    source = serializers.ChoiceField(
        choices=LabelSource.choices,
        required=False,
        default=LabelSource.QUEUE,
        help_text="`sample` only for a result drawn at random, whatever its content (a "
        "calibration sample: only those correct the judge's pass rate); `queue` otherwise.",
    )


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


def visible_versions(user):
    return DatasetVersion.objects.for_user(user)
