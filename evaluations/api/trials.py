"""API for trials: the executions of a run (case x repetition), listed and read one by one.

Read-only: trials are written by the engine. A trial is visible with its run (its agent), so a
trial the user may not see is a 404. The list is for walking a run's trials (`?run=`), so it
carries what a client filters and sums on (status, latency, tokens, cost, the outcome verdict)
and leaves the transcript and evidence to the detail, which adds every check result. Both cost a
fixed number of queries however many trials there are: the list is paged by a cursor on the id
(no COUNT over a table that grows by a run's size every run), the detail prefetches its check
results in one query.
"""

import django_filters
from django.db.models import F, Prefetch
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.pagination import CursorPagination

from evaluations.choices import TrialStatus
from evaluations.contract.totals import COUNT_FIELDS
from evaluations.models import CheckResult, Trial
from sherlock.core.api.filters import IdFilter
from sherlock.core.api.serializers import LeanRepresentation, MoneyField

# What the list shows; the detail adds the JSON documents, which are the heavy part of a row.
LIST_FIELDS = [
    "id",
    "run",
    "case",
    "repetition",
    "status",
    "attempts",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "billing_coverage",
    "declared_complete",
    "outcome_verdict",
    "error",
    "started_at",
    "finished_at",
]


class TrialSerializer(LeanRepresentation, serializers.ModelSerializer):
    case = serializers.CharField(
        source="case_key", read_only=True, help_text="Stable id within the dataset."
    )
    cost_usd = MoneyField(
        allow_null=True,
        read_only=True,
        help_text="The agent's cost of the trial (null when unknown); the judge's share is in "
        "the run's spend.",
    )

    class Meta:
        model = Trial
        fields = LIST_FIELDS
        read_only_fields = fields


class CheckResultSerializer(LeanRepresentation, serializers.ModelSerializer):
    check = serializers.IntegerField(source="check_config_id")
    label = serializers.CharField(source="check_config.label")
    kind = serializers.CharField(source="check_config.kind")

    class Meta:
        model = CheckResult
        fields = [
            "id",
            "check",
            "label",
            "kind",
            "status",
            "score",
            "threshold",
            "blocking",
            "reason",
            "evidence",
            "judge_call_ids",
        ]
        read_only_fields = fields


class TrialDetailSerializer(TrialSerializer):
    check_results = CheckResultSerializer(many=True, read_only=True)

    class Meta(TrialSerializer.Meta):
        fields = [
            *LIST_FIELDS,
            "worker",
            "transcript",
            "outcome_evidence",
            "progress",
            "wait",
            "tool_effects",
            *COUNT_FIELDS,  # the per-trial contract counts
            "check_results",
        ]
        read_only_fields = fields


class TrialFilter(django_filters.FilterSet):
    # A plain id, not a model choice: a choice filter would look the run up first.
    run = IdFilter(field_name="run_id", help_text="The run's id.")
    status = django_filters.ChoiceFilter(choices=TrialStatus.choices)
    case = django_filters.CharFilter(field_name="case__key", help_text="The case's key.")

    class Meta:
        model = Trial
        fields = ["run", "status", "case"]


class TrialCursorPagination(CursorPagination):
    """In the order trials were planned (by id); a cursor, so a page costs the same at any depth
    and no COUNT is made."""

    ordering = "id"


@extend_schema_view(
    list=extend_schema(summary="Trials of the runs the user may see (filter by `run`)"),
    retrieve=extend_schema(
        summary="One trial: transcript, outcome and tool-effect evidence, every check result"
    ),
)
class TrialViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Trials, read-only (the engine writes them)."""

    serializer_class = TrialSerializer
    filterset_class = TrialFilter
    pagination_class = TrialCursorPagination
    queryset = Trial.objects.none()

    def get_serializer_class(self):
        return TrialDetailSerializer if self.action == "retrieve" else TrialSerializer

    def get_queryset(self):
        # The case's key comes with the row (an annotation), not as a related object per trial.
        trials = Trial.objects.for_user(self.request.user).annotate(case_key=F("case__key"))
        if self.action == "retrieve":
            results = CheckResult.objects.select_related("check_config").order_by(
                "check_config__position", "check_config__label"
            )
            return trials.prefetch_related(Prefetch("check_results", queryset=results))
        # The list never reads the JSON documents: leave them in the database.
        return trials.only(*LIST_FIELDS)
