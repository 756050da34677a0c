"""API for schedules: list, create, change, pause/resume and delete `RunSchedule`s.

Every write goes through the schedule verbs (`evaluations.actions.*_schedule`), which decide who
may (an Editor of the dataset or a Builder of the agent: 403 otherwise) and validate the timing
(400 naming the field), and ask `confirm_cost` of a month above
SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD. `estimate` is the cost of one run and of a month of runs
(`evaluations.actions.fire_schedule.estimate_schedule`) with the versions the schedule resolves to
now; `next_run` comes from the django-q2 row the schedule owns.
"""

from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from agents.models import Agent, AgentVersion
from evaluations.actions.create_schedule import CreateSchedule
from evaluations.actions.delete_schedule import DeleteSchedule
from evaluations.actions.fire_schedule import estimate_schedule
from evaluations.actions.pause_schedule import set_schedule_active
from evaluations.actions.schedule_fields import SCHEDULE_FIELDS
from evaluations.actions.update_schedule import UpdateSchedule
from evaluations.models import Dataset, DatasetVersion, RunSchedule
from evaluations.reads.run_rights import datasets_to_run
from sherlock.core.api.errors import refusals
from sherlock.core.api.serializers import RefuseUnknownFields
from sherlock.core.hidden import VisiblePrimaryKeyRelatedField, VisibleSlugRelatedField


class ScheduleSerializer(RefuseUnknownFields, serializers.ModelSerializer):
    agent = VisibleSlugRelatedField(slug_field="slug", queryset=Agent.objects.none())
    dataset = VisibleSlugRelatedField(slug_field="slug", queryset=Dataset.objects.none())
    agent_version = VisiblePrimaryKeyRelatedField(
        queryset=AgentVersion.objects.none(), allow_null=True, required=False
    )
    dataset_version = VisiblePrimaryKeyRelatedField(
        queryset=DatasetVersion.objects.none(), allow_null=True, required=False
    )
    cron = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
    interval_minutes = serializers.IntegerField(required=False, allow_null=True, default=None)
    confirm_cost = serializers.BooleanField(
        write_only=True,
        required=False,
        default=False,
        help_text="Confirms the monthly cost: needed (400, code cost_confirmation_required) when "
        "the month's estimate passes SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD; recorded in the "
        "audit entry.",
    )
    created_by = serializers.StringRelatedField(read_only=True, allow_null=True)
    next_run = serializers.DateTimeField(read_only=True, allow_null=True)
    estimate = serializers.SerializerMethodField(
        help_text="One run and a month of runs (30 days), with the versions resolved now."
    )

    class Meta:
        model = RunSchedule
        fields = [
            "id",
            *SCHEDULE_FIELDS,
            "confirm_cost",
            "created_by",
            "created_at",
            "last_run",
            "last_fired_at",
            "last_error",
            "next_run",
            "estimate",
        ]
        read_only_fields = ["created_at", "last_run", "last_fired_at", "last_error"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")  # absent when the schema generator builds it
        if request is None:
            return
        agents = Agent.objects.for_user(request.user)
        datasets = datasets_to_run(request.user)
        self.fields["agent"].queryset = agents
        self.fields["dataset"].queryset = datasets
        self.fields["agent_version"].queryset = AgentVersion.objects.filter(agent__in=agents)
        self.fields["dataset_version"].queryset = DatasetVersion.objects.filter(
            dataset__in=datasets
        )

    @extend_schema_field(serializers.JSONField(allow_null=True))
    def get_estimate(self, schedule):
        agent_version, dataset_version = schedule.resolve()
        if agent_version is None or dataset_version is None:
            return None
        return estimate_schedule(
            agent_version,
            dataset_version,
            schedule.repetitions,
            schedule.cron,
            schedule.interval_minutes,
        )


@extend_schema_view(
    list=extend_schema(summary="Schedules of the agents the user may see"),
    retrieve=extend_schema(summary="One schedule, its last and next run and its estimate"),
    create=extend_schema(
        summary="Schedule a run", responses={201: ScheduleSerializer, **refusals(400, 403)}
    ),
    partial_update=extend_schema(
        summary="Change a schedule", responses={200: ScheduleSerializer, **refusals(400, 403)}
    ),
    update=extend_schema(
        summary="Replace a schedule's timing and versions",
        responses={200: ScheduleSerializer, **refusals(400, 403)},
    ),
    destroy=extend_schema(
        summary="Delete a schedule (its runs stay)", responses={204: None, **refusals(403)}
    ),
)
class ScheduleViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Schedules; `POST /schedules/{id}/pause/` and `/resume/` stop and restart one."""

    serializer_class = ScheduleSerializer

    def get_queryset(self):
        return (
            RunSchedule.objects.for_user(self.request.user)
            .select_related("agent__live_version", "dataset", "created_by", "q_schedule")
            .order_by("-created_at", "-id")
        )

    def perform_create(self, serializer):
        serializer.instance = CreateSchedule(
            acting_user=self.request.user, **serializer.validated_data
        ).execute()

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        for name in ("agent", "dataset"):  # the same pair may be sent back; another is refused
            if data.get(name) == getattr(serializer.instance, name):
                data.pop(name)
        serializer.instance = UpdateSchedule(
            acting_user=self.request.user, schedule=serializer.instance, **data
        ).execute()

    def perform_destroy(self, instance):
        DeleteSchedule(acting_user=self.request.user, schedule=instance).execute()

    @extend_schema(
        summary="Pause a schedule",
        request=None,
        responses={200: ScheduleSerializer, **refusals(403)},
    )
    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None):
        return self._set_active(request, False)

    @extend_schema(
        summary="Resume a paused schedule",
        request=None,
        responses={200: ScheduleSerializer, **refusals(403)},
    )
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        return self._set_active(request, True)

    def _set_active(self, request, active):
        schedule = set_schedule_active(
            acting_user=request.user, schedule=self.get_object(), active=active
        ).execute()
        data = ScheduleSerializer(schedule, context={"request": request}).data
        return Response(data, status=status.HTTP_200_OK)
