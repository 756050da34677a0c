"""API for runs: start one, follow its progress and cost, cancel it.

Progress (trials done of total, errors, spend so far with the judge's share) lives on the run
and is updated by the engine as trials finish, so reading it costs one query however large the
run is. The estimate is made before the run starts (`evaluations.costs.estimate.estimate_run`), with
the judge's status; its `warnings` (blocking model checks that cannot be scored: no judge, or the
last `check_judge` probe failed for their family) are repeated at the top level, so the answer
to `POST /runs/` says so before any trial runs. An unknown cost is never 0: `spend.usd` is null
while calls have no price, with `price_missing_calls` and the priced part `usd_known`
(`evaluations.costs.texts.format_usd` words it). Every list starts from `Run.objects.for_user` (a
run is visible with its agent); a run the user may not see is a 404. Starting and cancelling go
through the actions, which decide who may (403) and whether the run may (409).
"""

import time

import django_filters
from django.conf import settings
from django.db.models import F
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from agents.choices import Adapter
from agents.models import AgentVersion
from evaluations.actions.cancel_run import CancelRun
from evaluations.actions.start_run import SEED_LIMIT, StartRun
from evaluations.actions.summarize_run import SummarizeRun
from evaluations.api.client_runs import ClientRunActions
from evaluations.choices import RUN_TERMINAL, RunPurpose, RunStatus
from evaluations.contract import policy_by_id
from evaluations.costs.texts import format_usd
from evaluations.models import DatasetVersion, Run
from evaluations.reads.junit import run_junit
from evaluations.reads.run_rights import dataset_versions_to_run
from evaluations.verdict import OUTCOMES, run_verdict
from sherlock.core.api.filters import IdFilter
from sherlock.core.api.serializers import LeanRepresentation, MoneyField, RefuseUnknownFields
from sherlock.core.errors import ActionInvalid
from sherlock.core.hidden import VisiblePrimaryKeyRelatedField
from sherlock.core.inputs import parse_id
from sherlock.core.limits import excerpt

# How often a long-polled verdict (`?wait=`) reads the run's status: the client hears of the
# verdict within this of the run's end.
VERDICT_WAIT_STEP = 0.1
_ERROR = OpenApiResponse(description='`{"detail", "code"}` (and `field` for a 400)')


class ProgressSerializer(LeanRepresentation, serializers.Serializer):
    done = serializers.IntegerField(source="trials_done")
    total = serializers.IntegerField(source="trials_total")
    errors = serializers.IntegerField(source="trials_error")
    percent = serializers.SerializerMethodField()

    def get_percent(self, run) -> float:
        return round(100 * run.trials_done / run.trials_total, 1) if run.trials_total else 0.0


class SpendSerializer(LeanRepresentation, serializers.Serializer):
    """Spend so far. A cost that is unknown is never 0: while any call has no price (no
    `ModelPrice`, no reported cost), `usd` is null and `price_missing_calls` says how many;
    `usd_known` is the priced part, `judge_usd` the priced judge part. `unpriced_calls` is
    the same count as `price_missing_calls` (kept for older clients)."""

    usd = serializers.SerializerMethodField(
        help_text="Total spend, agent and judge; null while a call's price is missing."
    )
    usd_known = MoneyField(
        source="spend_usd",
        total=True,
        help_text="The priced part of the spend (every call whose cost is known).",
    )
    judge_usd = MoneyField(
        source="judge_spend_usd",
        total=True,
        help_text="The priced part of the judge's spend.",
    )
    price_missing_calls = serializers.IntegerField(
        source="unpriced_calls", help_text="Agent and judge calls whose cost is unknown."
    )
    unpriced_calls = serializers.IntegerField(help_text="Same as price_missing_calls.")
    price_missing = serializers.SerializerMethodField()
    text = serializers.SerializerMethodField(
        help_text='As the pages show it: "$0.0123", or "price missing (3 calls)".'
    )

    @extend_schema_field(MoneyField(total=True, allow_null=True))
    def get_usd(self, run):
        return None if run.unpriced_calls else f"{run.spend_usd:.8f}"

    def get_price_missing(self, run) -> bool:
        return run.unpriced_calls > 0

    def get_text(self, run) -> str:
        return format_usd(run.spend_usd, run.unpriced_calls)


# The names of a run's agent, dataset and requester come with the row, as `runs()` annotates
# them, not as five related objects per run.
class RunSerializer(LeanRepresentation, serializers.ModelSerializer):
    agent = serializers.CharField(source="agent_slug", read_only=True)
    agent_version_number = serializers.IntegerField(read_only=True)
    agent_version_name = serializers.CharField(read_only=True)
    dataset = serializers.CharField(source="dataset_slug", read_only=True)
    dataset_version_number = serializers.IntegerField(read_only=True)
    requested_by = serializers.CharField(
        source="requested_by_name", read_only=True, allow_null=True
    )
    progress = ProgressSerializer(source="*", read_only=True)
    spend = SpendSerializer(source="*", read_only=True)
    warnings = serializers.SerializerMethodField(
        help_text="From the estimate: blocking model checks that cannot be scored, and why."
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "agent",
            "agent_version",
            "agent_version_number",
            "agent_version_name",
            "dataset",
            "dataset_version",
            "dataset_version_number",
            "repetitions",
            "purpose",
            "status",
            "stop_early",
            "seed",
            "sequential",
            "source",
            "progress",
            "spend",
            "estimate",
            "warnings",
            "summary",
            "judge_summary",
            "requested_by",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    def get_warnings(self, run) -> list[str]:
        return list((run.estimate or {}).get("warnings") or [])


class StartRunSerializer(RefuseUnknownFields, serializers.Serializer):
    """What `POST /runs/` takes. Versions the user may not see do not exist, for them."""

    agent_version = VisiblePrimaryKeyRelatedField(queryset=AgentVersion.objects.none())
    dataset_version = VisiblePrimaryKeyRelatedField(queryset=DatasetVersion.objects.none())
    repetitions = serializers.IntegerField(default=1, min_value=1, max_value=100)
    stop_early = serializers.BooleanField(
        default=False,
        help_text="Run the cases in an order drawn from a seed and stop once every gate is "
        'decided (docs/contract.md, "Stopping early").',
    )
    seed = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=SEED_LIMIT - 1,
        help_text="The order's seed, with stop_early (default: one drawn at random).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")  # absent when the schema generator builds it
        if request is None:
            return
        user = request.user
        self.fields["agent_version"].queryset = AgentVersion.objects.for_user(user).select_related(
            "agent"
        )
        self.fields["dataset_version"].queryset = dataset_versions_to_run(user)

    def validate_agent_version(self, version):
        # Its run would wait for uploads nobody sends from here (docs/client.md).
        if version.adapter == Adapter.CLIENT:
            raise serializers.ValidationError(
                f"{version} runs on the client, not here: run it with `sherlock run --agent "
                f"{version.agent.slug} --task module:function` (POST /runs/client/)",
                code="client_version",
            )
        return version


class VerdictPolicySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class VerdictReasonSerializer(serializers.Serializer):
    code = serializers.CharField(
        help_text="A gate's name (coverage, false_success, ..., checks_scored, "
        "case_pass_rate) or run_not_completed / run_not_finished"
    )
    detail = serializers.CharField()
    fix = serializers.CharField(
        help_text="What to do about it: what the gate measures, what failed, who may change "
        'it ("" when nothing applies)'
    )
    docs = serializers.CharField(help_text='The served docs\' section that explains it, or ""')


class VerdictGateSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    state = serializers.ChoiceField(
        choices=["pass", "fail", "n/a", "insufficient"],
        help_text="insufficient: a rate decided on its interval, which straddles the threshold",
    )
    value = serializers.JSONField(help_text="What the gate read (counts, ratios, money as strings)")
    bound = serializers.JSONField(help_text="What it applied (the policy's limit)")
    detail = serializers.CharField()


class VerdictCasesSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    errored = serializers.IntegerField(help_text="Cases with a trial in error")
    unscored = serializers.IntegerField(help_text="Cases with a blocking result not scored")


class VerdictMissingSerializer(serializers.Serializer):
    code = serializers.ChoiceField(
        choices=["outcome_verification", "judge", "quality_grader", "billing"]
    )
    detail = serializers.CharField()
    fix = serializers.CharField(help_text="What adds the evidence, or the policy setting")
    docs = serializers.CharField(help_text="Path of the served docs page that explains it")


class VerdictSerializer(serializers.Serializer):
    """The body of `GET /runs/{id}/verdict/` (docs/api.md, "Verdict")."""

    run = serializers.IntegerField()
    url = serializers.URLField(help_text="The run page")
    status = serializers.CharField(help_text="The run's status")
    outcome = serializers.ChoiceField(choices=list(OUTCOMES))
    exit_code = serializers.IntegerField(
        allow_null=True,
        help_text="0 passed, 1 failed, 2 incomplete or insufficient evidence; null while pending",
    )
    policy = VerdictPolicySerializer(allow_null=True, help_text="null: the defaults applied")
    thresholds = serializers.CharField(help_text="Which thresholds, in words")
    reasons = VerdictReasonSerializer(many=True)
    gates = VerdictGateSerializer(many=True)
    cases = VerdictCasesSerializer()
    missing = VerdictMissingSerializer(many=True)


class RunFilter(django_filters.FilterSet):
    """`?status=waiting&agent=<slug>&version=<name>`: the client finds the gate runs it is to
    fulfil (docs/client.md); `agent_version` and `dataset_version` by id."""

    status = django_filters.ChoiceFilter(choices=RunStatus.choices)
    purpose = django_filters.ChoiceFilter(choices=RunPurpose.choices)
    agent_version = IdFilter(field_name="agent_version_id")
    dataset_version = IdFilter(field_name="dataset_version_id")
    agent = django_filters.CharFilter(field_name="agent_version__agent__slug")
    version = django_filters.CharFilter(field_name="agent_version__name")
    dataset = django_filters.CharFilter(field_name="dataset_version__dataset__slug")

    class Meta:
        model = Run
        fields = ["status", "purpose", "agent_version", "dataset_version"]


# The columns RunSerializer reads, for `only()` (a column it reads that is missing here costs
# a query per row, which the tests' query counts catch).
SHOWN = [
    *("id", "agent_version", "dataset_version"),
    *("repetitions", "purpose", "status", "trials_done", "trials_total", "trials_error"),
    *("stop_early", "seed", "sequential"),
    *("spend_usd", "judge_spend_usd", "unpriced_calls", "estimate", "summary", "judge_summary"),
    *("created_at", "started_at", "finished_at", "source"),
]


def runs(user):
    """The runs `user` may see, newest first, with what RunSerializer names from other rows
    (the agent's and dataset's slugs and version numbers, the requester's username) as
    annotations: a page of runs is one model per row instead of six."""
    return (
        Run.objects.for_user(user)
        .annotate(
            agent_slug=F("agent_version__agent__slug"),
            agent_version_number=F("agent_version__number"),
            agent_version_name=F("agent_version__name"),
            dataset_slug=F("dataset_version__dataset__slug"),
            dataset_version_number=F("dataset_version__number"),
            requested_by_name=F("requested_by__username"),
        )
        .order_by("-created_at", "-id")
    )


@extend_schema_view(
    list=extend_schema(summary="Runs the user may see, newest first, with their progress"),
    retrieve=extend_schema(summary="One run: progress, spend so far, estimate and summary"),
)
class RunViewSet(
    ClientRunActions,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Runs. `POST /runs/` starts one (StartRun), `POST /runs/{id}/cancel/` cancels it,
    `POST /runs/{id}/summary/` asks the judge for its summary (SummarizeRun); a client run's
    `work/`, `transcripts/` and `finish/` are `evaluations.api.client_runs`'."""

    serializer_class = RunSerializer
    filterset_class = RunFilter

    def get_queryset(self):
        visible = runs(self.request.user)
        if self.action in ("list", "retrieve"):
            # Reading only: load what the serializer shows, not the run's comparability or its
            # configuration snapshots. The verbs hand whole rows to their actions.
            visible = visible.only(*SHOWN)
        return visible

    @extend_schema(
        summary="Start a run",
        request=StartRunSerializer,
        responses={201: RunSerializer, 400: _ERROR, 403: _ERROR},
    )
    def create(self, request):
        body = StartRunSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        run = StartRun(acting_user=request.user, **body.validated_data).execute()
        run = self.get_queryset().get(pk=run.pk)
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Cancel a run: pending trials are cancelled, running ones finish",
        request=None,
        responses={200: RunSerializer, 403: _ERROR, 409: _ERROR},
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        run = CancelRun(acting_user=request.user, run=self.get_object()).execute()
        return Response(RunSerializer(self.get_queryset().get(pk=run.pk)).data)

    @extend_schema(
        summary="The run's verdict under a publishing policy",
        description="The one verdict every surface shows (run page, compare, `manage.py "
        "evaluate`, the publish gate): `outcome` passed/failed/incomplete/pending with its "
        "`exit_code`, the reasons, every gate, the case counts and the evidence the run lacks "
        "with what adds it. Under the policy in force for the run's agent, or `?policy=<id>`. "
        "`?wait=<seconds>` holds the answer while the run is not finished, up to that long "
        "(at most `SHERLOCK_VERDICT_WAIT_MAX_SECONDS`), so a client learns the verdict as soon "
        "as it exists instead of polling.",
        parameters=[
            OpenApiParameter("policy", int, required=False, description="a publishing policy's id"),
            OpenApiParameter(
                "wait",
                float,
                required=False,
                description="seconds to hold the answer while the run is unfinished (long poll)",
            ),
        ],
        responses={200: VerdictSerializer, 400: _ERROR, 404: _ERROR},
    )
    @action(detail=True, methods=["get"])
    def verdict(self, request, pk=None):
        self._await_finish(request)
        run, verdict = self._verdict(request)
        url = request.build_absolute_uri(reverse("evaluations:run-detail", args=[run.pk]))
        return Response(verdict.as_dict(run=run.pk, url=url))

    @extend_schema(
        summary="A run's JUnit XML report",
        description='The run as a CI reads a test report (docs/api.md, "JUnit report"): one '
        "testcase "
        "per case (failed and flaky as a `<failure>` naming the blocking checks that failed, "
        "unscored as an `<error>` with its reason) and a `verdict` testcase that fails unless "
        "the verdict passed, under the policy in force or `?policy=<id>`. The same file as "
        "`manage.py export_run --format junit`, `evaluate --junit` and `sherlock run --junit`.",
        parameters=[
            OpenApiParameter("policy", int, required=False, description="a publishing policy's id")
        ],
        responses={(200, "application/xml"): OpenApiTypes.STR, 400: _ERROR, 404: _ERROR},
    )
    @action(detail=True, methods=["get"])
    def junit(self, request, pk=None):
        run, verdict = self._verdict(request)
        return HttpResponse(run_junit(run, verdict), content_type="application/xml; charset=utf-8")

    def _await_finish(self, request):
        """`?wait=<seconds>`: hold the answer until the run is finished (its status terminal)
        or the time is up, reading the one status column every `VERDICT_WAIT_STEP` seconds;
        the verdict is then computed once. 404 before any wait when the run is not visible."""
        raw = request.query_params.get("wait")
        if raw in (None, ""):
            return
        try:
            seconds = float(raw)
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds < float("inf"):
            raise ActionInvalid(
                f"'wait' must be a number of seconds, not {excerpt(raw)}", field="wait"
            )
        run = self.get_object()
        deadline = time.monotonic() + min(seconds, settings.SHERLOCK_VERDICT_WAIT_MAX_SECONDS)
        status_of = Run.objects.filter(pk=run.pk).values_list("status", flat=True)
        while run.status not in RUN_TERMINAL and time.monotonic() < deadline:
            time.sleep(min(VERDICT_WAIT_STEP, max(0.0, deadline - time.monotonic())))
            run.status = status_of.first()

    def _verdict(self, request):
        """The run (404 when not visible) and its verdict under `?policy=` or the one in force."""
        run = self.get_object()
        run = (
            Run.objects.select_related("agent_version__agent", "dataset_version__dataset")
            .defer("comparability")
            .get(pk=run.pk)
        )
        applied = None
        raw = request.query_params.get("policy")
        if raw not in (None, ""):
            policy_id = parse_id(raw)
            applied = policy_by_id(policy_id) if policy_id is not None else None
            if applied is None:
                raise ActionInvalid(
                    f"'policy' must be the id of a publishing policy, not {excerpt(raw)}",
                    field="policy",
                )
        return run, run_verdict(run, applied)

    @extend_schema(
        summary="Ask the judge for a summary of a completed run",
        description="Failures grouped by reason, the worst cases, what changed against the "
        "previous run of the agent on the dataset; every statement cites case keys of the run "
        "(a statement citing others is dropped, under `judge_summary.dropped`). 409 when the "
        "run is not completed, no judge is configured, or the judge cited no case.",
        request=None,
        responses={200: RunSerializer, 403: _ERROR, 409: _ERROR},
    )
    @action(detail=True, methods=["post"])
    def summary(self, request, pk=None):
        run = SummarizeRun(acting_user=request.user, run=self.get_object()).execute()
        return Response(RunSerializer(self.get_queryset().get(pk=run.pk)).data)
