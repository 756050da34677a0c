"""API for a dataset's cases as files, and for comparing its versions:

- `POST /api/v1/datasets/{slug}/draft/import/`: a file upload (multipart, field `file`, with
  `format` optional) or a JSON list of Sherlock case objects, upserted by key into the
  dataset's draft (`ImportCases`); `?dry_run=true` answers the preview and writes nothing. A
  file with bad rows answers 400 with every error, each in the error shape plus its `line`;
- `GET /api/v1/datasets/{slug}/export/?version=N&format=jsonl|csv`: the version's cases as a
  file (without `version`: the draft, else the latest frozen version);
- `GET /api/v1/datasets/{slug}/diff/?a=N&b=M`: `diff_versions` of two versions.

The dataset comes from `Dataset.objects.for_user`: one the user may not see is a 404.
"""

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluations.actions.import_cases import CasesInvalid, ImportCases
from evaluations.cases_io import (
    MEDIA_TYPES,
    READ_FORMATS,
    WRITE_FORMATS,
    export_cases,
    read_upload,
    version_to_export,
)
from evaluations.models import Dataset
from evaluations.reads.dataset_diff import diff_versions
from sherlock.core.api.errors import (
    ErrorItemSerializer,
    ErrorSerializer,
    RequestTooLarge,
    refusals,
)
from sherlock.core.api.parsers import MultiPartParser, refuse_large_body
from sherlock.core.errors import ActionInvalid
from sherlock.core.hidden import note_hidden
from sherlock.core.limits import excerpt


@extend_schema_field(OpenApiTypes.BINARY)
class UploadField(serializers.FileField):
    """The uploaded file: binary in the OpenAPI schema (a FileField alone is documented as the
    `format: uri` of its download link, which is what it answers, not what it takes)."""


class UploadSerializer(serializers.Serializer):
    file = UploadField(help_text="the cases file (docs/cases.md), at most the body limit in bytes")
    format = serializers.ChoiceField(
        choices=READ_FORMATS, required=False, help_text="default: detected from name and content"
    )


class CaseObjectSerializer(serializers.Serializer):
    """One Sherlock case object (documentation of the JSON list; the action validates it)."""

    key = serializers.SlugField()
    input = serializers.JSONField(required=False)
    expected = serializers.JSONField(required=False)
    contexts = serializers.ListField(child=serializers.CharField(), required=False)
    expected_tools = serializers.ListField(required=False)
    outcome_check = serializers.JSONField(required=False)
    tags = serializers.ListField(child=serializers.CharField(), required=False)
    overrides = serializers.JSONField(required=False)


class ImportKeysSerializer(serializers.Serializer):
    added = serializers.ListField(child=serializers.CharField())
    changed = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="key -> the fields that change",
    )
    unchanged = serializers.ListField(child=serializers.CharField())


class ImportResultSerializer(serializers.Serializer):
    dataset_version = serializers.IntegerField(
        allow_null=True, help_text="the draft's id (dry run without a draft: the frozen base's)"
    )
    number = serializers.IntegerField(allow_null=True)
    format = serializers.CharField()
    dry_run = serializers.BooleanField()
    started_draft = serializers.BooleanField()
    added = serializers.IntegerField()
    changed = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    keys = ImportKeysSerializer()
    errors = serializers.ListField(child=serializers.JSONField(), help_text="dry run only")


class RowErrorSerializer(ErrorItemSerializer):
    """One bad row of an import: the error shape plus the row's `line`."""

    line = serializers.IntegerField(help_text="the line (JSONL), row (CSV) or item (JSON)")


class ImportErrorsSerializer(ErrorSerializer):
    """A refused import: the error shape, with every bad row under `errors` when rows were
    read (a request without cases has no rows)."""

    errors = RowErrorSerializer(many=True, required=False)


class ChangesSerializer(serializers.Serializer):
    added = serializers.ListField(child=serializers.CharField())
    removed = serializers.ListField(child=serializers.CharField())
    changed = serializers.ListField(
        child=serializers.JSONField(), help_text='{"key" or "label", "fields": {name: {a, b}}}'
    )
    unchanged = serializers.IntegerField()


class DiffSerializer(serializers.Serializer):
    a = serializers.IntegerField()
    b = serializers.IntegerField()
    cases = ChangesSerializer()
    checks = ChangesSerializer()


def result_body(result):
    return {
        "dataset_version": result.version.pk if result.version else None,
        "number": result.version.number if result.version else None,
        "format": result.format,
        "dry_run": result.dry_run,
        "started_draft": result.started_draft,
        **{k: v for k, v in result.counts().items() if k != "errors"},
        "keys": {"added": result.added, "changed": result.changed, "unchanged": result.unchanged},
        "errors": [e.as_dict() for e in result.errors],
    }


def errors_body(errors):
    first = errors[0]
    return {
        "detail": f"{len(errors)} error(s), nothing imported; first: {first}",
        "code": "invalid",
        "field": first.field,
        "errors": [e.as_dict() for e in errors],
    }


class NotVisible(Exception):
    """A dataset or version that does not exist or that the user may not see."""


def not_found(detail):
    return Response({"detail": detail, "code": "not_found"}, status=404)


def visible_dataset(request, slug):
    dataset = Dataset.objects.for_user(request.user).filter(slug=slug).first()
    if dataset is None:
        note_hidden(request, Dataset, slug=slug)
        raise NotVisible(f"No dataset {excerpt(slug)} (or you may not see it).")
    return dataset


def answers_404(view):
    """The error shape for a 404 too (DRF's own 404 has no `code`)."""

    def wrapped(self, request, slug):
        try:
            return view(self, request, slug)
        except NotVisible as exc:
            return not_found(str(exc))

    wrapped.__name__, wrapped.__doc__ = view.__name__, view.__doc__
    return wrapped


def flag(value):
    return str(value).lower() in ("1", "true", "yes", "on")


DRY_RUN = OpenApiParameter("dry_run", bool, description="answer the preview; write nothing")


class JSONBody(bytes):
    """The import's JSON body as it came: read by the cases reader, not parsed here."""


class JSONBodyParser(BaseParser):
    """The import's JSON list, bounded as every body (413) but left unparsed: the cases reader
    (`sherlock_jsonl.read_case_list`) parses it item by item as it reads a file, so a member
    given twice, a depth, a NUL or a lone surrogate is named with its item, and the reading
    stops at the case past the limit instead of after parsing the whole body."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        refuse_large_body(parser_context)
        limit = settings.SHERLOCK_API_MAX_BODY_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise RequestTooLarge()
        return JSONBody(raw)


class CasesImportView(APIView):
    parser_classes = [MultiPartParser, JSONBodyParser]

    @extend_schema(
        operation_id="datasets_draft_import",
        summary="Import cases into the dataset's draft (upsert by key)",
        parameters=[DRY_RUN],
        request={
            "multipart/form-data": UploadSerializer,
            "application/json": CaseObjectSerializer(many=True),
        },
        responses={
            200: ImportResultSerializer,
            400: OpenApiResponse(
                ImportErrorsSerializer, description="bad rows: every error, nothing imported"
            ),
            **refusals(403, 404),
        },
    )
    @answers_404
    def post(self, request, slug):
        dataset = visible_dataset(request, slug)
        data = request.data
        form_flag = data.get("dry_run", "") if isinstance(data, Mapping) else ""
        dry_run = flag(request.query_params.get("dry_run", form_flag))
        if isinstance(data, JSONBody):
            source: dict[str, Any] = {"cases": bytes(data)}
        elif "file" in request.FILES:
            upload = request.FILES["file"]
            source = {
                "text": read_upload(upload, upload.size),
                "filename": upload.name,
                "fmt": data.get("format") or None,
            }
        else:
            raise ActionInvalid(
                "give a file (multipart field `file`) or a JSON list of cases", field="file"
            )
        try:
            result = ImportCases(
                acting_user=request.user, dataset=dataset, dry_run=dry_run, **source
            ).execute()
        except CasesInvalid as exc:
            return Response(errors_body(exc.errors), status=400)
        return Response(ImportResultSerializer(result_body(result)).data)


class FirstRenderer(DefaultContentNegotiation):
    """`?format=` names the export's file format here, not DRF's renderer override."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class CasesExportView(APIView):
    content_negotiation_class = FirstRenderer

    @extend_schema(
        operation_id="datasets_export",
        summary="A version's cases as Sherlock case JSONL or CSV",
        parameters=[
            OpenApiParameter("version", int, description="default: the draft, else latest frozen"),
            OpenApiParameter("format", str, enum=list(WRITE_FORMATS), description="default jsonl"),
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "text/csv"): OpenApiTypes.STR,
            **refusals(400, 404),
        },
    )
    @answers_404
    def get(self, request, slug):
        dataset = visible_dataset(request, slug)
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in WRITE_FORMATS:
            raise ActionInvalid(f"format: one of {', '.join(WRITE_FORMATS)}", field="format")
        number = _number(request, "version", required=False)
        version = version_to_export(dataset, number)
        if version is None:
            return not_found(
                f"No version {number} of {excerpt(slug)}." if number else "No version yet."
            )
        response = HttpResponse(export_cases(version, fmt), content_type=MEDIA_TYPES[fmt])
        name = f"{dataset.slug}-v{version.number}.{fmt}"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


VERSION_NUMBER_MAX = 2**31 - 1  # the column's range on PostgreSQL; SQLite overflows at 2**63


def _number(request, name, required=True):
    raw = request.query_params.get(name)
    if raw in (None, ""):
        if required:
            raise ActionInvalid(f"{name}: a version number is needed", field=name)
        return None
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= VERSION_NUMBER_MAX:
        raise ActionInvalid(f"{name}: must be a version number", field=name)
    return int(raw)


class DatasetDiffView(APIView):
    @extend_schema(
        operation_id="datasets_diff",
        summary="Cases and checks added, removed and changed between two versions",
        parameters=[
            OpenApiParameter("a", int, required=True, description="the baseline version number"),
            OpenApiParameter("b", int, required=True, description="the other version number"),
        ],
        responses={200: DiffSerializer, **refusals(400, 404)},
    )
    @answers_404
    def get(self, request, slug):
        dataset = visible_dataset(request, slug)
        a, b = _number(request, "a"), _number(request, "b")
        versions = {v.number: v for v in dataset.versions.filter(number__in=[a, b])}
        for name, number in (("a", a), ("b", b)):
            if number not in versions:
                return Response(
                    {"detail": f"{name}: no version {number}", "code": "not_found", "field": name},
                    status=404,
                )
        return Response(DiffSerializer(diff_versions(versions[a], versions[b])).data)
