"""API for production traces: what a team sent, listed, searched and read one by one
(docs/production.md, "Reading traces").

Read-only: traces are written by the receiver. A trace is visible with its agent (the roles that
see the agent see its traces), so one the user may not see is a 404. The list carries what a
client filters and sums on (state, times, tokens, cost, latency, session, user) and leaves the
transcript and spans to the detail, which adds the normalized transcript, the resource, the
spans in tree order and the online score. Both cost a fixed number of queries however many
traces there are: the list is paged by a cursor on the id (no COUNT over a table that grows
with production traffic).
"""

import django_filters
from django.db.models import Exists, OuterRef, Q
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination

from production.choices import TraceState
from production.models import Span, Trace, TraceScore
from production.reads.traces import search_text, span_tree
from sherlock.core.api.filters import IdFilter, UTCDateTimeFilter
from sherlock.core.api.serializers import LeanRepresentation, MoneyField

LIST_FIELDS = [
    "id",
    "trace_id",
    "agent",
    "version",
    "state",
    "state_reason",
    "received_at",
    "first_span_at",
    "last_span_at",
    "completed_at",
    "span_count",
    "dialect",
    "input_text",
    "output_text",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "model",
    "has_error",
    "session",
    "end_user",
]
TEXT_IN_LIST = 500  # the list's input and output, cut: the detail has them whole


class TraceSerializer(LeanRepresentation, serializers.ModelSerializer):
    agent = serializers.CharField(source="agent.slug", read_only=True)
    version = serializers.IntegerField(
        source="agent_version.number", read_only=True, allow_null=True, default=None
    )
    cost_usd = MoneyField(allow_null=True, read_only=True)

    class Meta:
        model = Trace
        fields = LIST_FIELDS
        read_only_fields = fields

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if self.context.get("view") is not None and self.context["view"].action == "list":
            for name in ("input_text", "output_text"):
                data[name] = (data[name] or "")[:TEXT_IN_LIST]
        return data


class SpanSerializer(LeanRepresentation, serializers.ModelSerializer):
    depth = serializers.IntegerField(read_only=True, help_text="Depth in the span tree.")

    class Meta:
        model = Span
        fields = [
            "span_id",
            "parent_span_id",
            "depth",
            "name",
            "kind",
            "start_time",
            "end_time",
            "status_code",
            "status_message",
            "scope_name",
            "scope_version",
            "attributes",
            "events",
        ]
        read_only_fields = fields


class TraceScoreSerializer(LeanRepresentation, serializers.ModelSerializer):
    cost_usd = MoneyField(allow_null=True, read_only=True)

    class Meta:
        model = TraceScore
        fields = [
            "state",
            "reason",
            "results",
            "quality_score",
            "declared_complete",
            "outcome_verdict",
            "tool_effects",
            "cost_usd",
            "scored_at",
            "lag_ms",
        ]
        read_only_fields = fields


class TraceDetailSerializer(TraceSerializer):
    spans = serializers.SerializerMethodField(help_text="The spans in tree order, with depth.")
    score = serializers.SerializerMethodField(help_text="The online score, when there is one.")

    class Meta(TraceSerializer.Meta):
        fields = [*LIST_FIELDS, "transcript", "resource", "normalizer_version", "spans", "score"]
        read_only_fields = fields

    @extend_schema_field(SpanSerializer(many=True))
    def get_spans(self, trace):
        return SpanSerializer(span_tree(list(trace.spans.all())), many=True).data

    @extend_schema_field(TraceScoreSerializer(allow_null=True))
    def get_score(self, trace):
        score = getattr(trace, "online_score", None)
        return TraceScoreSerializer(score).data if score is not None else None


class TraceFilter(django_filters.FilterSet):
    agent = django_filters.CharFilter(field_name="agent__slug", help_text="The agent's slug.")
    version = IdFilter(field_name="agent_version__number", help_text="The version's number.")
    state = django_filters.ChoiceFilter(choices=TraceState.choices)
    received_after = UTCDateTimeFilter(field_name="received_at", lookup_expr="gte")
    received_before = UTCDateTimeFilter(field_name="received_at", lookup_expr="lt")
    session = django_filters.CharFilter(help_text="`session.id` or `gen_ai.conversation.id`.")
    user = django_filters.CharFilter(field_name="end_user", help_text="`user.id`.")
    has_error = django_filters.BooleanFilter()
    q = django_filters.CharFilter(
        method="search", help_text="Text in the trace's input or output (case-insensitive)."
    )
    attribute = django_filters.CharFilter(
        method="attribute_equals",
        help_text="`key=value`: the resource or any span has the string attribute `key` with "
        "the value `value`.",
    )

    class Meta:
        model = Trace
        fields = [
            "agent",
            "version",
            "state",
            "received_after",
            "received_before",
            "session",
            "user",
            "has_error",
            "q",
            "attribute",
        ]

    def search(self, queryset, name, value):
        return search_text(queryset, value)

    def attribute_equals(self, queryset, name, value):
        key, sep, wanted = value.partition("=")
        key = key.strip()
        if not sep or not key or len(key) > 200:
            raise ValidationError({"attribute": ["must be key=value, e.g. deployment=eu-1"]})
        if "__" in key:  # the ORM's path separator: no attribute key it could address
            return queryset.none()
        on_span = Span.objects.filter(trace=OuterRef("pk"), **{f"attributes__{key}": wanted})
        return queryset.filter(Q(**{f"resource__{key}": wanted}) | Exists(on_span))


class TraceCursorPagination(CursorPagination):
    """Newest first (by id: traces are created as their first span arrives); a cursor, so a
    page costs the same at any depth and no COUNT is made."""

    ordering = "-id"


@extend_schema_view(
    list=extend_schema(
        summary="Production traces of the agents the user may see, newest first (filters, "
        "search, cursor pages)"
    ),
    retrieve=extend_schema(
        summary="One trace: its normalized transcript, resource, spans in tree order, score"
    ),
)
class TraceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Production traces, read-only (the receiver writes them)."""

    serializer_class = TraceSerializer
    filterset_class = TraceFilter
    pagination_class = TraceCursorPagination
    queryset = Trace.objects.none()

    def get_serializer_class(self):
        return TraceDetailSerializer if self.action == "retrieve" else TraceSerializer

    def get_queryset(self):
        traces = Trace.objects.for_user(self.request.user).select_related("agent", "agent_version")
        if self.action == "retrieve":
            return traces.select_related("online_score").prefetch_related("spans")
        return traces.defer("transcript", "resource")
