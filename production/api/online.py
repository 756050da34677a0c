"""The API of online scoring: an agent's production contract and online rule, and the
rollback proposals a breach opens (docs/production-online.md). Every write goes through the
production actions; agents and proposals come from `for_user`, so what a caller may not see
is a 404 before any action is tried."""

from datetime import timedelta

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from agents.models import Agent
from production.actions.confirm_rollback_proposal import ConfirmRollbackProposal
from production.actions.create_online_rule import CreateOnlineRule
from production.actions.dismiss_rollback_proposal import DismissRollbackProposal
from production.actions.online_rule_fields import FIELDS
from production.actions.update_online_rule import UpdateOnlineRule
from production.models import OnlineRule, RollbackProposal
from production.online.contract import lag_figures, production_contract, production_dict
from production.online.spend import day_spend
from production.reads.metrics import RANGES, metrics_json, production_metrics
from sherlock.core.api.errors import refusals
from sherlock.core.api.serializers import RefuseUnknownFields
from sherlock.core.limits import REASON_MAX

REFUSED = refusals(400, 403, 404, 409, s400="Invalid input (every bad field named).")


class OnlineRuleSerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = OnlineRule
        fields = ["agent", *FIELDS, "created_at", "updated_at"]  # the actions' own fields
        read_only_fields = fields


class OnlineRuleInputSerializer(RefuseUnknownFields, serializers.Serializer):
    """The fields to write; those left out keep their value (or default, on creation). The
    actions validate them (filters, checks and the verifier in their documented shapes)."""

    active = serializers.JSONField(required=False)
    sampling_rate = serializers.JSONField(required=False)
    filters = serializers.JSONField(required=False)
    library_version = serializers.JSONField(required=False)
    library_labels = serializers.JSONField(required=False)
    checks = serializers.JSONField(required=False)
    quality_check = serializers.JSONField(required=False)
    outcome_check = serializers.JSONField(required=False)
    verify_effects = serializers.JSONField(required=False)
    completion_tool = serializers.JSONField(required=False)
    judge_model = serializers.JSONField(required=False)
    daily_cap_usd = serializers.JSONField(required=False)


class ProposalSerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    from_version = serializers.IntegerField(source="from_version.number", read_only=True)
    to_version = serializers.IntegerField(
        source="to_version.number", read_only=True, allow_null=True
    )
    decided_by = serializers.CharField(
        source="decided_by.username", read_only=True, default=None, allow_null=True
    )

    class Meta:
        model = RollbackProposal
        fields = [
            "id",
            "agent",
            "from_version",
            "to_version",
            "state",
            "breach",
            "opened_at",
            "decided_by",
            "decided_at",
            "reason",
        ]
        read_only_fields = fields


class ProposalReasonSerializer(RefuseUnknownFields, serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=REASON_MAX
    )


ProductionSerializer = inline_serializer(
    "AgentProduction",
    {
        "agent": serializers.CharField(),
        "live_version": serializers.IntegerField(allow_null=True),
        "thresholds": serializers.JSONField(allow_null=True),
        "windows": serializers.JSONField(help_text="One per window: contract, breaches."),
        "gate": serializers.JSONField(allow_null=True),
        "rule": OnlineRuleSerializer(allow_null=True),
        "spend_today": serializers.JSONField(allow_null=True),
        "lag_ms_24h": serializers.JSONField(),
        "open_proposal": ProposalSerializer(allow_null=True),
    },
)


class AgentProductionViewSet(viewsets.GenericViewSet):
    """`/agents/{slug}/production/` and `/agents/{slug}/online-rule/` (the agent itself is
    `agents.api`)."""

    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"
    queryset = Agent.objects.none()
    serializer_class = OnlineRuleSerializer

    def get_queryset(self):
        return Agent.objects.for_user(self.request.user, "view").select_related("live_version")

    @extend_schema(
        summary="The live version's contract over production, beside its gate run",
        description="The five measures of the live version's scored traces over each sliding "
        "window (24 h and 7 d by default), with the contract's Wilson intervals and evidence "
        "states, the breaches found, the gate runs' contract, the online rule, today's judge "
        "spend under its cap and the lag from completion to scores.",
        responses={200: ProductionSerializer, 404: OpenApiTypes.OBJECT},
    )
    @action(detail=True, methods=["get"])
    def production(self, request, slug=None):
        agent = self.get_object()
        body = {"agent": agent.slug, **production_dict(production_contract(agent))}
        rule = OnlineRule.objects.filter(agent=agent).first()
        body["rule"] = OnlineRuleSerializer(rule).data if rule else None
        body["spend_today"] = None
        if rule is not None:
            spent, reserved, capped_at, capped, stopped_by = day_spend(rule)
            body["spend_today"] = {
                "cap_usd": str(rule.daily_cap_usd),
                "spent_usd": str(spent),
                "reserved_usd": str(reserved),
                "capped_at": capped_at,
                "capped_traces": capped,
                "capped_by_cap_usd": None if stopped_by is None else str(stopped_by),
            }
        count, p50, p95 = lag_figures(agent, timezone.now() - timedelta(hours=24))
        body["lag_ms_24h"] = {"scored": count, "p50": p50, "p95": p95}
        proposal = RollbackProposal.objects.select_related(
            "agent", "from_version", "to_version", "decided_by"
        ).open_for(agent)
        body["open_proposal"] = ProposalSerializer(proposal).data if proposal else None
        return Response(body)

    @extend_schema(
        summary="Production metrics of the agent over time, per version",
        description="Per hour over the last 48 hours (`range=48h`, the default) or per day "
        "over the last 30 days (`range=30d`), per version: traces received, errors and error "
        "rate, latency p50 and p95 (nearest rank), tokens, cost (and traces without a price), "
        "and the mean score of each online check over the traces scored (the newest 10,000). "
        "Lists are aligned on `buckets` (UTC); null where nothing was measured.",
        parameters=[
            OpenApiParameter("range", str, enum=["48h", "30d"], required=False),
        ],
        responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
    )
    @action(detail=True, methods=["get"], url_path="production/metrics")
    def production_metrics(self, request, slug=None):
        agent = self.get_object()
        wanted = request.query_params.get("range", "48h")
        if wanted not in RANGES:
            raise ValidationError({"range": ["must be 48h or 30d"]})
        return Response(metrics_json(production_metrics(agent, wanted)))

    @extend_schema(
        methods=["get"],
        summary="The agent's online rule",
        responses={200: OnlineRuleSerializer, 404: OpenApiTypes.OBJECT},
    )
    @extend_schema(
        methods=["put"],
        summary="Write the agent's online rule (Builder or Admin of the agent)",
        description="Creates the rule the first time, then changes the fields given. Filters, "
        "checks and the outcome verifier are validated (docs/production-online.md); every "
        "bad field is answered at once under `errors`. `library_version` must be a frozen "
        "version of a dataset the caller may see: another is answered as one that does not "
        "exist (400 on the field).",
        request=OnlineRuleInputSerializer,
        responses={200: OnlineRuleSerializer, 201: OnlineRuleSerializer, **REFUSED},
    )
    @action(detail=True, methods=["get", "put"], url_path="online-rule")
    def online_rule(self, request, slug=None):
        agent = self.get_object()
        rule = OnlineRule.objects.filter(agent=agent).first()
        if request.method == "GET":
            if rule is None:
                return Response(
                    {
                        "detail": "This agent has no online rule.",
                        "code": "not_found",
                        "field": None,
                    },
                    status=status.HTTP_404_NOT_FOUND,
                )
            return Response(OnlineRuleSerializer(rule).data)
        data = OnlineRuleInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        if rule is None:
            rule = CreateOnlineRule(acting_user=request.user, agent=agent, **fields).execute()
            return Response(OnlineRuleSerializer(rule).data, status=status.HTTP_201_CREATED)
        rule = UpdateOnlineRule(acting_user=request.user, rule=rule, changes=fields).execute()
        return Response(OnlineRuleSerializer(rule).data)


@extend_schema_view(
    list=extend_schema(summary="Rollback proposals you may see, newest first"),
    retrieve=extend_schema(summary="One rollback proposal with its breach"),
)
class RollbackProposalViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    serializer_class = ProposalSerializer
    queryset = RollbackProposal.objects.none()

    def get_queryset(self):
        return RollbackProposal.objects.for_user(self.request.user, "view").select_related(
            "agent", "from_version", "to_version", "decided_by"
        )

    def _verb(self, request, action_class):
        proposal = self.get_object()
        data = ProposalReasonSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        action_class(
            acting_user=request.user, proposal=proposal, reason=data.validated_data["reason"]
        ).execute()
        return Response(ProposalSerializer(self.get_queryset().get(pk=proposal.pk)).data)

    @extend_schema(
        summary="Confirm: publish the previous version again, through the gate (Publisher)",
        request=ProposalReasonSerializer,
        responses={200: ProposalSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def confirm(self, request, pk=None):
        return self._verb(request, ConfirmRollbackProposal)

    @extend_schema(
        summary="Dismiss: keep the live version, with a reason (Publisher)",
        request=ProposalReasonSerializer,
        responses={200: ProposalSerializer, **REFUSED},
    )
    @action(detail=True, methods=["post"])
    def dismiss(self, request, pk=None):
        return self._verb(request, DismissRollbackProposal)
