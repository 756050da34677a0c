"""API for a finished run's case results: one row per case, as the engine wrote it when the run
finished (`CaseResult`: its state, `passed`, `failed`, `flaky` or `unscored` with the reason,
repetitions passed of run, each check's summary). `passed` is true only for a passed case,
never for an unscored one.

The `sherlock` client reads them for its case table and its JUnit report (one testcase per
case, failed when the case failed), so that whether a case passed is the server's answer, not
a rule the client re-implements from trials (docs/client-cli.md). Read-only, visible with the
run (its agent): a run the user may not see has no case results for them. Paged by a cursor
on the id, so a page costs the same at any depth and no COUNT is made; one query a page.
"""

import django_filters
from django.db.models import F
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.pagination import CursorPagination

from evaluations.models import CaseResult, Run
from sherlock.core.api.filters import IdFilter
from sherlock.core.api.serializers import LeanRepresentation
from sherlock.core.permissions import within


class CaseResultSerializer(LeanRepresentation, serializers.ModelSerializer):
    case = serializers.CharField(
        source="case_key", read_only=True, help_text="The case's key in the dataset."
    )
    checks = serializers.JSONField(
        read_only=True,
        help_text="Each check's summary over the repetitions, by label: status, mean score, "
        "flaky, blocking.",
    )

    class Meta:
        model = CaseResult
        fields = [
            "id",
            "run",
            "case",
            "status",
            "reason",
            "passed",
            "flaky",
            "repetitions",
            "repetitions_passed",
            "repetitions_unscored",
            "checks",
        ]
        read_only_fields = fields


class CaseResultFilter(django_filters.FilterSet):
    run = IdFilter(field_name="run_id", help_text="The run's id.")

    class Meta:
        model = CaseResult
        fields = ["run", "status", "passed", "flaky"]


class CaseResultCursorPagination(CursorPagination):
    ordering = "id"


@extend_schema_view(
    list=extend_schema(summary="Case results of the runs you may see (filter by `run`)"),
    retrieve=extend_schema(summary="One case result"),
)
class CaseResultViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Case results, read-only (the engine writes them when a run finishes)."""

    serializer_class = CaseResultSerializer
    filterset_class = CaseResultFilter
    pagination_class = CaseResultCursorPagination
    queryset = CaseResult.objects.none()

    def get_queryset(self):
        visible = within(CaseResult.objects.all(), "run", Run.objects.for_user(self.request.user))
        return visible.annotate(case_key=F("case__key"))
