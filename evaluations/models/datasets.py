"""The Dataset aggregate: datasets, their numbered versions, cases and checks.

A dataset has at most one unfrozen (draft) version, which Editors change; freezing makes it
immutable, and the next draft starts as a copy of the last frozen one. Runs pin a version.
"""

import hashlib
import json

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from evaluations.checks import ParamsError, UnknownCheckKind, validate_params
from evaluations.choices import CheckMode
from sherlock.core.numbers import COUNT
from sherlock.core.permissions import ScopedQuerySet, ScopedThroughQuerySet


def judging_key(kind, params, judge_model):
    """The calibration key of a model check: a hash of what decides the judge's verdict (its
    kind, its params, where the criterion and rubric live, and its judge model). A human label
    stores the key it was given under; changing any of these starts calibration afresh, and the
    old labels stay, shown as belonging to the old version (evaluations.reads.calibration)."""
    canonical = json.dumps([kind, params or {}, judge_model or ""], sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class Dataset(models.Model):
    """A named collection of cases, edited by Editors."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ScopedQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]
        permissions = [("edit_dataset", "Can edit cases and checks and freeze versions")]

    def __str__(self):
        return self.slug

    @property
    def latest_frozen(self):
        return self.versions.filter(frozen_at__isnull=False).order_by("-number").first()


class DatasetVersionQuerySet(ScopedThroughQuerySet):
    """A user sees a dataset's versions when they may see the dataset (a role on it, or a
    global one): `DatasetVersion.objects.for_user(user)`."""

    scope_path = "dataset"

    def drafts_to_edit(self, user):
        """The drafts of the datasets `user` may edit: where a case or check can be added (the
        admin's case and check forms, the trace page's "Add to dataset", the drafts' picker)."""
        return self.for_user(user, "edit").filter(frozen_at__isnull=True).select_related("dataset")


class DatasetVersion(models.Model):
    """An immutable, numbered snapshot of a dataset's cases and checks (once `frozen_at` is set)."""

    # Not a column: the version a new draft was copied from, as its creator said.
    copied_from: "DatasetVersion | None"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    frozen_at = models.DateTimeField(null=True, blank=True)
    frozen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = DatasetVersionQuerySet.as_manager()

    class Meta:
        ordering = ["dataset", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "number"], name="datasetversion_unique_number"
            ),
            models.UniqueConstraint(
                fields=["dataset"],
                condition=Q(frozen_at__isnull=True),
                name="datasetversion_one_draft",
            ),
        ]

    def __str__(self):
        suffix = "" if self.frozen_at else " (draft)"
        return f"{self.dataset.slug} v{self.number}{suffix}"

    @property
    def is_frozen(self):
        return self.frozen_at is not None


class Case(models.Model):
    """One test's stable identity within a dataset; its content lives per version."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="cases")
    key = models.SlugField(max_length=200, help_text="Stable id within the dataset.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "key"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "key"], name="case_unique_key"),
        ]

    def __str__(self):
        return f"{self.dataset.slug}/{self.key}"


class CaseVersion(models.Model):
    """A case's content in one dataset version: input, expectations, contexts, expected tools,
    outcome verifier, tags and per-check overrides (`{label: {threshold, params, mode,
    disabled}}`). The dict given to a check is `as_check_input()` (docs/checks.md)."""

    dataset_version = models.ForeignKey(
        DatasetVersion, on_delete=models.CASCADE, related_name="case_versions"
    )
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="versions")
    input = models.JSONField(default=str, blank=True)
    expected = models.JSONField(default=dict, blank=True)
    contexts = models.JSONField(default=list, blank=True)
    expected_tools = models.JSONField(default=list, blank=True)
    outcome_check = models.JSONField(default=dict, blank=True)
    tags = models.JSONField(default=list, blank=True)
    overrides = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["dataset_version", "case__key"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset_version", "case"], name="caseversion_unique_case"
            ),
        ]

    def __str__(self):
        return f"{self.case.key} @ v{self.dataset_version.number}"

    def as_check_input(self):
        return {
            "id": self.case.key,
            "input": self.input,
            "expected": self.expected or {},
            "contexts": self.contexts or [],
            "expected_tools": self.expected_tools or [],
            "tags": self.tags or [],
        }


class Check(models.Model):
    """An evaluator config of a dataset version: applied to every case unless a case overrides
    or disables it. `label` is the results grid's column header, unique in the version."""

    dataset_version = models.ForeignKey(
        DatasetVersion, on_delete=models.CASCADE, related_name="checks"
    )
    label = models.CharField(max_length=100)
    kind = models.CharField(max_length=50)
    params = models.JSONField(default=dict, blank=True)
    # Validators report a bad value on its field; the constraints below keep the database honest.
    threshold = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    mode = models.CharField(max_length=12, choices=CheckMode.choices, default=CheckMode.BLOCKING)
    judge_model = models.CharField(max_length=200, blank=True)
    requires_calibration = models.BooleanField(default=False)
    min_labels = models.PositiveIntegerField(default=20, validators=COUNT.validators())
    kappa_floor = models.FloatField(
        default=0.6, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    position = models.PositiveIntegerField(default=0, validators=COUNT.validators())
    # Task quality is "the sum of quality scores over the trials where the quality
    # grader actually ran". The grader is named, not guessed from a kind: at most one check per
    # dataset version carries this flag, and a run without one reports quality as n/a.
    quality_grader = models.BooleanField(
        default=False,
        help_text="This check's score is the run's task quality (five-metric contract).",
    )

    class Meta:
        ordering = ["dataset_version", "position", "label"]
        constraints = [
            models.UniqueConstraint(fields=["dataset_version", "label"], name="check_unique_label"),
            models.UniqueConstraint(
                fields=["dataset_version"],
                condition=Q(quality_grader=True),
                name="check_one_quality_grader",
            ),
            models.CheckConstraint(
                condition=Q(threshold__isnull=True) | Q(threshold__gte=0, threshold__lte=1),
                name="check_threshold_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=Q(kappa_floor__gte=0, kappa_floor__lte=1),
                name="check_kappa_floor_in_unit_interval",
            ),
            models.CheckConstraint(condition=Q(mode__in=CheckMode.values), name="check_mode_valid"),
        ]

    def __str__(self):
        return self.label

    @property
    def version_hash(self):
        """What makes two runs' scores comparable: kind, params, threshold, mode, judge model."""
        canonical = json.dumps(
            [self.kind, self.params, self.threshold, self.mode, self.judge_model],
            sort_keys=True,
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def calibration_key(self):
        """`judging_key` of this check: its labels count toward its calibration only under it."""
        return judging_key(self.kind, self.params, self.judge_model)

    def clean(self):

        if self.params is not None and not isinstance(self.params, dict):
            raise ValidationError({"params": "must be a JSON object"})
        params = dict(self.params or {})
        if self.kind == "custom":
            # The custom check's label is the check's own label (the results column header):
            # one source of truth, unique in the dataset version.
            params["label"] = self.label
        try:
            self.params = validate_params(self.kind, params)
        except UnknownCheckKind as exc:
            raise ValidationError({"kind": str(exc)}) from None
        except ParamsError as exc:
            raise ValidationError({"params": f"{exc.field}: {exc.message}"}) from None
