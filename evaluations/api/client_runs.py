"""The client-run API (docs/client.md): runs whose agent runs on the team's machines.

The `sherlock` client starts a run of a `client` version (`POST /runs/client/`, or takes up a
waiting gate run of a publish request), lists its work items (`GET /runs/{id}/work/`), uploads
a transcript or an error per item (`POST /runs/{id}/transcripts/`) and finishes it (`POST
/runs/{id}/finish/`), after which the workers score it as any run. Every change goes through an
action (StartRun, ClaimGateRun, UploadTranscripts, FinishClientRun), which decides who may
(403) and whether the run may (409); a run the caller may not see is a 404.

A work item's `key` is `"<case_version_id>:<repetition>"` (`Trial.work_key`): a client that
resumes a run computes the same keys, and the server refuses nothing twice (a key stored once
is a `duplicate` after). Its `context` is the case as the team's function sees it: the case's
id, input and tags, the repetition, and the tools the version offers; never the answer key
(`expected`, reference `contexts`, `expected_tools`), which stays with Sherlock as it does for
an `http` agent (docs/adapters.md).
"""

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.choices import Adapter
from agents.models import Agent, AgentVersion
from evaluations.actions.claim_gate_run import ClaimGateRun
from evaluations.actions.finish_client_run import FinishClientRun
from evaluations.actions.start_run import StartRun
from evaluations.actions.upload_transcripts import UPLOAD_MAX_ITEMS, UploadTranscripts
from evaluations.choices import RunPurpose, RunStatus, TrialStatus
from evaluations.models import Dataset, Run, Trial
from evaluations.reads.run_rights import runnable_datasets
from sherlock.core.api.errors import refusals
from sherlock.core.api.serializers import RefuseUnknownFields
from sherlock.core.errors import ActionConflict, ActionInvalid
from sherlock.core.hidden import note_hidden
from sherlock.core.inputs import INT64_MAX
from sherlock.core.limits import CONFIG_MAX_BYTES, check_document, excerpt

# --- starting -----------------------------------------------------------------------------------


class SourceSerializer(RefuseUnknownFields, serializers.Serializer):
    """Where the run's answers come from, as the client reads it from git and the CI's
    environment; stored on the run (`Run.source`) and shown on its page. Every field optional."""

    git_commit = serializers.CharField(required=False, allow_blank=True, max_length=200)
    git_branch = serializers.CharField(required=False, allow_blank=True, max_length=500)
    git_repository = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    ci_provider = serializers.CharField(required=False, allow_blank=True, max_length=100)
    ci_job_url = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        help_text="The CI job's page; the run page links it only when it is http(s).",
    )
    ci_run_id = serializers.CharField(required=False, allow_blank=True, max_length=200)
    pull_request = serializers.CharField(required=False, allow_blank=True, max_length=200)
    config = serializers.JSONField(
        required=False, help_text=f"The client's own config, at most {CONFIG_MAX_BYTES} bytes."
    )

    def validate_config(self, value):
        try:
            check_document("metadata.config", value, CONFIG_MAX_BYTES)
        except ActionInvalid as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value


class ClientRunStartSerializer(RefuseUnknownFields, serializers.Serializer):
    agent = serializers.CharField(max_length=100, help_text="The agent's slug (or id).")
    version = serializers.CharField(
        max_length=200,
        help_text="The version's name (`POST /versions/ensure/`), or its number.",
    )
    dataset = serializers.CharField(
        max_length=100, help_text="The dataset's slug; its latest frozen version is used."
    )
    repetitions = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=100,
        help_text="Default 1. A gate run keeps its policy's repetitions.",
    )
    purpose = serializers.ChoiceField(
        choices=["manual", "adhoc", "gate"],
        default="manual",
        help_text="`manual` (stored as `adhoc`): a new run. `gate`: the waiting gate run of a "
        "publish request for this version on this dataset (none: 409 `no_gate_run`).",
    )
    publish_request = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=INT64_MAX,
        help_text="With purpose `gate`: the request whose gate run to fulfil (default: the "
        "newest waiting one).",
    )
    metadata = SourceSerializer(required=False)


class ClientRunSerializer(serializers.Serializer):
    """A client run as the client needs it: where to follow it and where to send its work."""

    id = serializers.IntegerField()
    url = serializers.CharField(help_text="The run's page (absolute).")
    status = serializers.ChoiceField(choices=RunStatus.choices)
    purpose = serializers.ChoiceField(choices=RunPurpose.choices)
    agent = serializers.CharField()
    agent_version = serializers.IntegerField()
    version = serializers.CharField(help_text="The version's name (empty when it has none).")
    dataset = serializers.CharField()
    dataset_version = serializers.IntegerField()
    dataset_version_number = serializers.IntegerField()
    repetitions = serializers.IntegerField()
    trials_total = serializers.IntegerField()
    source = serializers.JSONField()
    work_url = serializers.CharField()
    upload_url = serializers.CharField()
    finish_url = serializers.CharField()
    limits = serializers.JSONField(
        help_text="What one upload may hold: `body_bytes` (the request body), `item_bytes` "
        "(one transcript's compact JSON) and `items` (per call)."
    )


def client_run_data(request, run):
    def absolute(name):
        return request.build_absolute_uri(reverse(name, args=[run.pk]))

    return {
        "id": run.pk,
        "url": absolute("evaluations:run-detail"),
        "status": run.status,
        "purpose": run.purpose,
        "agent": run.agent_version.agent.slug,
        "agent_version": run.agent_version_id,
        "version": run.agent_version.name,
        "dataset": run.dataset_version.dataset.slug,
        "dataset_version": run.dataset_version_id,
        "dataset_version_number": run.dataset_version.number,
        "repetitions": run.repetitions,
        "trials_total": run.trials_total,
        "source": run.source,
        "work_url": absolute("run-work"),
        "upload_url": absolute("run-transcripts"),
        "finish_url": absolute("run-finish"),
        "limits": upload_limits(),
    }


def upload_limits():
    """The upload limits the server applies, told to the client so that it never exceeds them
    (docs/client.md, "Limits")."""
    return {
        "body_bytes": settings.SHERLOCK_API_MAX_BODY_BYTES,
        "item_bytes": settings.SHERLOCK_UPLOAD_ITEM_MAX_BYTES,
        "items": UPLOAD_MAX_ITEMS,
    }


def _missing(request, model, field, message, **lookup):
    note_hidden(request, model, **lookup)
    return ActionInvalid(message, field=field, code="does_not_exist")


def _agent(request, name):
    visible = Agent.objects.for_user(request.user)
    found = visible.filter(slug=name).first()
    if found is None and name.isascii() and name.isdigit() and int(name) <= INT64_MAX:
        found = visible.filter(pk=int(name)).first()
    if found is None:
        raise _missing(request, Agent, "agent", f"agent: no agent {excerpt(name)}", slug=name)
    return found


def _version(request, agent, name):
    versions = AgentVersion.objects.filter(agent=agent).select_related("agent")
    found = versions.filter(name=name).first()
    if found is None and name.isascii() and name.isdigit() and int(name) <= INT64_MAX:
        found = versions.filter(number=int(name)).first()
    if found is None:
        raise _missing(
            request,
            AgentVersion,
            "version",
            f"version: {agent.slug} has no version named {excerpt(name)} (create it with POST "
            "/api/v1/versions/ensure/)",
            name=name,
        )
    if found.adapter != Adapter.CLIENT:
        raise ActionInvalid(
            f"version: {found} runs on Sherlock (adapter {found.adapter}), not on the client: "
            "start it with POST /api/v1/runs/",
            field="version",
            code="not_client",
        )
    return found


def _dataset(request, slug, agent):
    found = runnable_datasets(request.user, agent).filter(slug=slug).first()
    if found is None:
        raise _missing(
            request, Dataset, "dataset", f"dataset: no dataset {excerpt(slug)}", slug=slug
        )
    frozen = found.latest_frozen
    if frozen is None:
        raise ActionInvalid(
            f"dataset: {slug} has no frozen version to run against",
            field="dataset",
            code="no_frozen_version",
        )
    return frozen


def _loaded(run_id):
    return Run.objects.select_related("agent_version__agent", "dataset_version__dataset").get(
        pk=run_id
    )


class ClientRunStartView(APIView):
    """`POST /runs/client/`: a run of a `client` version, waiting for the client's uploads."""

    @extend_schema(
        summary="Start a client run, or take up a waiting gate run (Builder)",
        description="A `manual` run is created `waiting` on the dataset's latest frozen "
        "version (StartRun, audited `evaluations.run.start`), 201. A `gate` run is the "
        "waiting gate run a publish request started for this version on this dataset; the "
        "metadata is recorded on it (ClaimGateRun, `evaluations.run.claim`), 200. Unknown "
        "agent, version or dataset: 400 `does_not_exist` naming the field; a version that "
        "is not `client`: 400 `not_client`.",
        request=ClientRunStartSerializer,
        responses={
            200: ClientRunSerializer,
            201: ClientRunSerializer,
            **refusals(400, 403, 409),
        },
        tags=["runs"],
    )
    def post(self, request):
        body = ClientRunStartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        agent = _agent(request, data["agent"])
        version = _version(request, agent, data["version"])
        dataset_version = _dataset(request, data["dataset"], agent)
        source = data.get("metadata") or {}
        if data["purpose"] == "gate":
            waiting = Run.objects.for_user(request.user).filter(
                agent_version=version,
                dataset_version__dataset=dataset_version.dataset,
                purpose=RunPurpose.GATE,
                status=RunStatus.WAITING,
            )
            if "publish_request" in data:
                waiting = waiting.filter(publish_requests__pk=data["publish_request"])
            run = waiting.order_by("-created_at", "-pk").first()
            if run is None:
                raise ActionConflict(
                    f"No waiting gate run of {version} on {dataset_version.dataset.slug}"
                    + (
                        f" for publish request #{data['publish_request']}"
                        if "publish_request" in data
                        else ""
                    )
                    + ": request publication first (`sherlock gate`).",
                    code="no_gate_run",
                )
            run = ClaimGateRun(acting_user=request.user, run=run, source=source).execute()
            return Response(client_run_data(request, _loaded(run.pk)))
        run = StartRun(
            acting_user=request.user,
            agent_version=version,
            dataset_version=dataset_version,
            repetitions=data.get("repetitions", 1),
            purpose=RunPurpose.ADHOC,
            source=source,
        ).execute()
        return Response(client_run_data(request, _loaded(run.pk)), status=status.HTTP_201_CREATED)


# --- work, uploads, finish: verbs on `/runs/{id}/` (mixed into RunViewSet) ---------------------


class WorkItemSerializer(serializers.Serializer):
    key = serializers.CharField(help_text='"<case_version_id>:<repetition>"')
    case = serializers.CharField(help_text="The case's key in the dataset.")
    case_version = serializers.IntegerField()
    repetition = serializers.IntegerField(help_text="1-based.")
    input = serializers.JSONField(help_text="The case's input (a string or any JSON).")
    context = serializers.JSONField(
        help_text="What the task function gets: `{id, input, repetition, tags, tools}` (tools "
        "the version offers: name, description, arguments_schema). The answer key is not sent."
    )
    uploaded = serializers.BooleanField(help_text="Only with ?all=1 can this be true.")


class WorkPageSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.CharField(allow_null=True)
    previous = serializers.CharField(allow_null=True)
    results = WorkItemSerializer(many=True)


class UploadItemSerializer(serializers.Serializer):
    key = serializers.CharField()
    transcript = serializers.JSONField(
        required=False, help_text="The documented transcript (docs/checks.md#the-transcript)."
    )
    error = serializers.JSONField(
        required=False,
        help_text='`{"kind": "raised"|"timeout"|"invalid", "message": str}`: an agent error.',
    )


class TranscriptsUploadSerializer(serializers.Serializer):
    items = UploadItemSerializer(many=True, help_text=f"At most {UPLOAD_MAX_ITEMS} per call.")


class UploadBodySerializer(RefuseUnknownFields, serializers.Serializer):
    """The body as read: its items are checked one by one by UploadTranscripts, which names
    the item at fault (`items[3].transcript.output`)."""

    items = serializers.JSONField()


class UploadResultSerializer(serializers.Serializer):
    accepted = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    remaining = serializers.IntegerField(help_text="Work items not uploaded yet.")


class FinishResultSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    url = serializers.CharField()
    trials_total = serializers.IntegerField()
    never_returned = serializers.IntegerField(
        help_text="Work items recorded as agent errors: never uploaded."
    )


class WorkPagination(PageNumberPagination):
    """The API's pages, and up to 500 items a page on request (`?page_size=`): one page holds
    as many items as one upload may."""

    page_size_query_param = "page_size"
    max_page_size = UPLOAD_MAX_ITEMS


def _check_client(run):
    if run.agent_version.adapter != Adapter.CLIENT:
        raise ActionConflict(
            f"Run {run.pk} is not a client run: Sherlock executes {run.agent_version}.",
            code="not_client_run",
        )


def _tools(version):
    return [
        {"name": t.name, "description": t.description, "arguments_schema": t.arguments_schema}
        for t in version.tools.all()
    ]


class ClientRunActions(viewsets.GenericViewSet):
    """The client's verbs on a run, mixed into `RunViewSet` (the same `/runs/{id}/` path)."""

    def _run(self):
        run = self.get_object()  # visibility: a run the caller may not see is a 404
        return _loaded(run.pk)

    @extend_schema(
        summary="A client run's work items not yet uploaded (?all=1: every item)",
        description="Paginated as every list (`{count, next, previous, results}`, follow "
        "`next`; `page_size` up to 500). Uploading changes which items are not yet uploaded: "
        "read the whole list before uploading, or page with `?all=1`, which is stable. "
        "409 `not_client_run` for a run Sherlock executes.",
        parameters=[
            OpenApiParameter("all", bool, description="1: the uploaded items too."),
            OpenApiParameter("page", int),
            OpenApiParameter("page_size", int, description="At most 500 (default 50)."),
        ],
        responses={200: WorkPageSerializer, **refusals(400, 404, 409)},
        filters=False,
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def work(self, request, pk=None):
        run = self._run()
        _check_client(run)
        trials = (
            Trial.objects.filter(run=run)
            .select_related("case_version__case")
            .order_by("case_version__case__key", "repetition", "pk")
        )
        if request.query_params.get("all") not in ("1", "true", "yes"):
            trials = trials.filter(status=TrialStatus.PENDING, uploaded_at__isnull=True)
        paginator = WorkPagination()
        page = paginator.paginate_queryset(trials, request, view=self)
        tools = _tools(run.agent_version)
        items = [
            {
                "key": trial.work_key,
                "case": trial.case_version.case.key,
                "case_version": trial.case_version_id,
                "repetition": trial.repetition,
                "input": trial.case_version.input,
                "context": {
                    "id": trial.case_version.case.key,
                    "input": trial.case_version.input,
                    "repetition": trial.repetition,
                    "tags": trial.case_version.tags or [],
                    "tools": tools,
                },
                "uploaded": trial.uploaded_at is not None,
            }
            for trial in page
        ]
        return paginator.get_paginated_response(items)

    @extend_schema(
        summary="Upload transcripts or errors of a waiting client run (Builder)",
        description="Atomic: a bad item refuses the whole batch (400) naming its place "
        "(`field`: `items[3].transcript.latency_ms`). Idempotent: an item whose key is "
        "already stored counts as a duplicate and changes nothing. An unknown key is 400 "
        "`unknown_key`; a run that is not waiting is 409 `run_closed`.",
        request=TranscriptsUploadSerializer,
        responses={200: UploadResultSerializer, **refusals(400, 403, 404, 409, 413)},
        filters=False,
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def transcripts(self, request, pk=None):
        run = self._run()
        body = UploadBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        items = body.validated_data["items"]
        result = UploadTranscripts(acting_user=request.user, run=run, items=items).execute()
        return Response(result)

    @extend_schema(
        summary="Finish a client run: never-uploaded items become agent errors; scoring starts",
        description="202 when the run was waiting: it is queued for scoring by the workers "
        "(the same engine as any run) and finishes as every run does. 200 with its state when "
        "it was finished (or cancelled) already.",
        request=None,
        responses={
            200: FinishResultSerializer,
            202: FinishResultSerializer,
            **refusals(403, 404, 409),
        },
        filters=False,
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def finish(self, request, pk=None):
        run = self._run()
        finishing = FinishClientRun(acting_user=request.user, run=run)
        run = finishing.execute()
        run.refresh_from_db()
        data = {
            "id": run.pk,
            "status": run.status,
            "url": request.build_absolute_uri(reverse("evaluations:run-detail", args=[run.pk])),
            "trials_total": run.trials_total,
            "never_returned": Trial.objects.filter(run=run, uploaded_at__isnull=True).count(),
        }
        code = status.HTTP_202_ACCEPTED if finishing.finished_now else status.HTTP_200_OK
        return Response(data, status=code)
