"""The API's error side (issue 15): whatever goes wrong with a request, the answer is a 4xx in
one shape (`ErrorSerializer`), documented on every operation of the OpenAPI schema
(`document_errors`), and bad input never reaches a 500.

- `exception_handler` turns domain errors (`sherlock.core.errors`), Django's and DRF's
  exceptions (validation, parse, 401, 403, 404, 405, 406, 413, 415, 429) into that shape;
- `JSONParser` and `MultiPartParser` bound the body (`SHERLOCK_API_MAX_BODY_BYTES`, 413) and
  the JSON nesting (`limits.JSON_MAX_DEPTH`, 400) before anything is parsed or written;
- `RefuseUnknownFields` makes an input serializer refuse a field it does not know (a typo
  would otherwise be silently ignored);
- `not_found` and `server_error` answer unrouted `/api/` paths in the shape too;
- `IdFilter` bounds an id filter to what a database can be asked (400 beyond a 64-bit signed
  integer), and `document_integer_range` says so of every integer parameter in the schema.
"""

import copy
import json
import logging
import math
from collections.abc import Mapping
from functools import cached_property
from operator import attrgetter

import django_filters
from django import forms
from django.conf import settings
from django.core.exceptions import (
    FieldDoesNotExist,
    ObjectDoesNotExist,
    RequestDataTooBig,
    TooManyFieldsSent,
)
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.views import defaults
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import exceptions, parsers, serializers, status
from rest_framework.fields import SkipField
from rest_framework.relations import PKOnlyObject, RelatedField
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from sherlock.core.errors import (
    ActionConflict,
    ActionDenied,
    ActionError,
    ActionInvalid,
    InvalidFields,
)
from sherlock.core.inputs import INT64_MAX, INT64_MIN
from sherlock.core.limits import JSON_MAX_DEPTH, excerpt, has_nul, json_depth

logger = logging.getLogger("sherlock.api")

# The last guard against echoing input, for messages that quote it whole (DRF's own "\"x\" is
# not a valid choice."): at most this many characters per message, per field path (the keys
# of a caller's JSON are input too) and errors per answer.
DETAIL_MAX = 300
FIELD_MAX = 100
ERRORS_MAX = 20


class ErrorItemSerializer(serializers.Serializer):
    """One error: what is wrong (`detail`), a stable machine-readable `code`, and the `field`
    at fault as a dotted path (`config`, `tools.2`, `params.schema`) when one is."""

    detail = serializers.CharField()
    code = serializers.CharField()
    field = serializers.CharField(required=False)


class ErrorSerializer(ErrorItemSerializer):
    """What every refused or failed call answers, whatever its status (400, 401, 403, 404,
    405, 406, 409, 413, 415, 429): `{"detail", "code", "field"?}`. When several fields fail,
    the top level is the first error (its `detail` naming its field and saying how many
    more) and `errors` lists them all, each in the same `{"detail", "code", "field"?}` shape,
    at most 20. Messages quote the caller's input only as a short excerpt (a message is at
    most 300 characters)."""

    errors = ErrorItemSerializer(
        many=True, required=False, help_text="Every error, when more than one field failed."
    )


REFUSAL_TEXT = {
    400: "Invalid input: malformed, too deep, wrongly typed or unknown fields.",
    401: "No credentials, or credentials that are not valid.",
    403: "Your role does not allow this.",
    404: "Not found, or not visible to you.",
    409: "The state forbids it (already published, blocked, ...).",
    413: "The request body is larger than the server accepts (SHERLOCK_API_MAX_BODY_BYTES).",
    415: "The body's media type is not accepted (JSON).",
    429: "Too many requests; retry after the time given in Retry-After.",
}


def refusals(*statuses, **texts):
    """The schema's error responses of an endpoint: `refusals(400, 403)`, each in the
    `ErrorSerializer` shape with the usual description, or one given as `texts["s400"]`."""
    return {
        code: OpenApiResponse(
            ErrorSerializer, description=texts.get(f"s{code}", REFUSAL_TEXT[code])
        )
        for code in statuses
    }


# --- the body: bounded before it is parsed --------------------------------------------------


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"

    def __init__(self):
        limit = settings.SHERLOCK_API_MAX_BODY_BYTES
        super().__init__(f"The request body is larger than {limit} bytes.")


class TooDeep(exceptions.ParseError):
    default_code = "too_deep"

    def __init__(self):
        super().__init__(f"JSON nested deeper than {JSON_MAX_DEPTH} levels.")


def refuse_large_body(parser_context):
    """RequestTooLarge when the declared Content-Length exceeds the limit (nothing read)."""
    request = (parser_context or {}).get("request")
    meta = getattr(request, "META", {})
    try:
        length = int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > settings.SHERLOCK_API_MAX_BODY_BYTES:
        raise RequestTooLarge()


def loads_bounded(raw, *, strict=True):
    """`raw` (bytes or text) parsed as JSON, refused as `TooDeep` when it nests deeper than
    `JSON_MAX_DEPTH` (the C parser's RecursionError included) or `ParseError` when it is not
    JSON. NaN and Infinity are refused when `strict`, as DRF's own parser does; an object that
    names a member twice is refused (last-wins would keep a value the sender may not see)."""

    def members(pairs):
        names = set()
        for name, _ in pairs:
            if name in names:
                raise ValueError(f"duplicate member {excerpt(name)}")
            names.add(name)
        return dict(pairs)

    def constant(name):
        raise ValueError(f"{name} is not valid JSON")

    def finite(text):  # 1e400 would be inf: not JSON once written back, nor storable
        number = float(text)
        if not math.isfinite(number):
            raise ValueError(f"number out of range: {excerpt(text)}")
        return number

    hooks = {"parse_constant": constant, "parse_float": finite} if strict else {}
    hooks["object_pairs_hook"] = members
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
        value = json.loads(text, **hooks)
    except RecursionError:
        raise TooDeep() from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise exceptions.ParseError(excerpt_text(f"JSON parse error - {exc}")) from None
    if json_depth(value) > JSON_MAX_DEPTH:
        raise TooDeep()
    if has_nul(value):
        raise exceptions.ParseError("JSON strings may not contain NUL (\\u0000) characters.")
    return value


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with the body bounded (413) and the nesting bounded (400 `too_deep`),
    so a 10 KB `[[[[...` answers 400 instead of a RecursionError's 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        refuse_large_body(parser_context)
        limit = settings.SHERLOCK_API_MAX_BODY_BYTES
        raw = stream.read(limit + 1)  # a body without a (truthful) length is bounded too
        if len(raw) > limit:
            raise RequestTooLarge()
        return loads_bounded(raw, strict=self.strict)


class MultiPartParser(parsers.MultiPartParser):
    """File uploads (the case import), bounded like JSON bodies; Django's parser reads no more
    than the Content-Length it was given."""

    def parse(self, stream, media_type=None, parser_context=None):
        refuse_large_body(parser_context)
        return super().parse(stream, media_type, parser_context)


class RefuseUnknownFields:
    """Mixed into an input serializer: a field it does not know is refused (400, code
    `unknown_field`, naming it) instead of silently ignored. Read-only fields count as known,
    so an object read from the API may be sent back as it is."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = [name for name in data if name not in self.fields]
            if unknown:
                raise serializers.ValidationError(
                    {str(name)[:FIELD_MAX]: "Unknown field." for name in unknown[:ERRORS_MAX]},
                    code="unknown_field",
                )
        return super().to_internal_value(data)


# --- reading: serializers without the per-row overhead ------------------------------------------


# Mixed into a serializer that reads rows (before `serializers.Serializer` or
# `ModelSerializer`): DRF's own `to_representation`, field by field with the fields' own
# `to_representation`, with its per-row overhead taken out. DRF walks `self.fields` through
# `Mapping.values()` and a generator for every row, and looks each attribute up through
# `get_attribute`, which tests every step for a Mapping and a callable: on a page of 50 rows and
# 20 fields that was half the serializer's time (issue 16). Here the readable fields are listed
# once per serializer, and a field that reads a plain attribute path (DRF's base
# `get_attribute`, a dotted `source`) reads it with `operator.attrgetter`; anything else, and
# any attribute that is missing, None on the way, or callable, goes through the field's own
# `get_attribute`, so the answer is DRF's in every case (tests/test_api_lean.py compares them).
# A date-time field asks for the active time zone once per answer, not per value, and a field
# whose representation of a value is that value (an int of an IntegerField, a str of a
# CharField) is not asked.
#
# A `ModelSerializer` also builds its fields from the model on every instance (the model's field
# info, then one field class and its arguments per name: a third of a detail's serializer time);
# here they are built once per class, and each instance gets copies, as DRF gives each instance
# copies of the declared fields.
# Measured with and without in one run (`bench/api_lean.py`, 2026-12-02, 5,000 entries, the
# loaded 2-core machine): CPU per request of the audit list 3.96 ms against 5.50 ms on DRF's own
# `to_representation` (28 % less), the audit detail 2.67 against 3.37 ms.
# (A comment, not a docstring: drf-spectacular would take a docstring as the description of
# every serializer that mixes this in.)
class LeanRepresentation:
    def get_fields(self):
        built = _BUILT_FIELDS.get(type(self))
        if built is None:
            built = _BUILT_FIELDS[type(self)] = super().get_fields()
        return {name: copy.deepcopy(field) for name, field in built.items()}

    @cached_property
    def _lean_fields(self):
        plan = []
        for field in self.fields.values():
            if field.write_only:
                continue
            if isinstance(field, serializers.DateTimeField) and not hasattr(field, "timezone"):
                # DRF asks for the active time zone on every value (a context-local lookup,
                # a tenth of a page of runs); it is the same for the whole answer.
                field.timezone = field.default_timezone()
            plain = (
                type(field).get_attribute is serializers.Field.get_attribute
                and field.source != "*"
                and all(part.isidentifier() for part in field.source_attrs)
            )
            same = _SAME_TYPE.get(type(field))
            if type(field) is serializers.JSONField and field.binary:
                same = None
            read = attrgetter(field.source) if plain else None
            key = self._foreign_key_column(field)
            if key is not None:
                # DRF reads a foreign key's id (its "pk only" shortcut) and answers that id.
                read, same = attrgetter(key), object
            whole = field.source == "*" and (
                type(field).get_attribute is serializers.Field.get_attribute
            )  # DRF's lookup of "*" is the row itself
            convert = field.to_representation
            if type(field) is serializers.SerializerMethodField:
                convert = getattr(self, field.method_name)  # what its to_representation calls
            related = isinstance(field, RelatedField)
            plan.append((field.field_name, field, read, same, whole, convert, related))
        return plan

    def _foreign_key_column(self, field):
        """The column of the foreign key a plain `PrimaryKeyRelatedField` of this model
        serializer shows (`agent_version_id`), or None."""
        model = getattr(getattr(self, "Meta", None), "model", None)
        if (
            type(field) is not serializers.PrimaryKeyRelatedField
            or field.pk_field is not None
            or len(field.source_attrs) != 1
            or model is None
        ):
            return None
        try:
            model_field = model._meta.get_field(field.source_attrs[0])
        except FieldDoesNotExist:
            return None
        return model_field.attname if model_field.many_to_one else None

    def to_representation(self, instance):
        if isinstance(instance, Mapping):
            return super().to_representation(instance)
        row = {}
        for name, field, read, same, whole, convert, related in self._lean_fields:
            if whole:
                row[name] = convert(instance)  # never None: the row itself
                continue
            attribute = _MISSING
            if read is not None:
                try:
                    attribute = read(instance)
                except (AttributeError, ObjectDoesNotExist):
                    attribute = _MISSING  # the field's own lookup decides: default, null, skip
                if callable(attribute):
                    attribute = _MISSING
            if attribute is _MISSING:
                try:
                    attribute = field.get_attribute(instance)
                except SkipField:
                    continue
            if attribute is None or (
                related and isinstance(attribute, PKOnlyObject) and attribute.pk is None
            ):
                row[name] = None
            elif same is not None and (same is object or type(attribute) is same):
                row[name] = attribute  # what the field's to_representation would return
            else:
                row[name] = convert(attribute)
        return row


_MISSING = object()
# DRF fields whose `to_representation` returns a value of this exact type unchanged (`int(v)`,
# `str(v)`, a bool as itself, a non-binary JSON value as itself): the call is skipped for them.
# Exact classes only: a subclass may represent differently.
_SAME_TYPE = {
    serializers.IntegerField: int,
    serializers.CharField: str,
    serializers.BooleanField: bool,
    serializers.FloatField: float,
    serializers.JSONField: object,
}
# serializer class -> its fields as `get_fields` first built them (the copies' originals).
_BUILT_FIELDS: dict[type, dict] = {}


# --- filtering --------------------------------------------------------------------------------


class ListFilterBackend(DjangoFilterBackend):
    """django-filter's backend, run only where there is something to filter. The schema
    documents filters on lists (as drf-spectacular does for any filter backend), yet DRF also
    runs them when it looks up one object, building the whole filter set and its form for
    nothing: a fifth of a detail's time (issue 16). So a detail answers the object its URL
    names, whatever the query string says; and a list asked with no query parameter but the
    page's is the whole list (an empty filter set filters nothing, since no filter of ours is
    `required`), without building the set."""

    def filter_queryset(self, request, queryset, view):
        if getattr(view, "detail", False):
            return queryset
        paginator = getattr(view, "paginator", None)
        paging = {
            getattr(paginator, name, None)
            for name in ("page_query_param", "page_size_query_param", "cursor_query_param")
        }
        if not set(request.query_params) - paging:
            return queryset
        return super().filter_queryset(request, queryset, view)


INT64 = {"type": "integer", "format": "int64", "minimum": INT64_MIN, "maximum": INT64_MAX}


@extend_schema_field(INT64)
class IdFilter(django_filters.NumberFilter):
    """A filter on an id or an integer column (`?run=12`): a whole number a database can be
    asked about, else 400 naming the parameter. django-filter's `NumberFilter` takes any
    decimal and Django bounds the lookups of integer columns, not of foreign keys: `run_id=2**63`
    is an `OverflowError` on SQLite (issue 22)."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", INT64_MIN)
        kwargs.setdefault("max_value", INT64_MAX)
        super().__init__(*args, **kwargs)


# --- the exception handler ------------------------------------------------------------------


def excerpt_text(text, limit=DETAIL_MAX):
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def field_errors(detail, path=()):
    """DRF's nested error detail (dicts by field, lists by item) as flat `(field, message,
    code)` triples; `non_field_errors` name no field."""
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            name = str(key)
            yield from field_errors(
                value,
                path if name in (api_settings.NON_FIELD_ERRORS_KEY, "__all__") else (*path, name),
            )
    elif isinstance(detail, list | tuple):
        for i, item in enumerate(detail):
            nested = isinstance(item, Mapping | list | tuple)
            yield from field_errors(item, (*path, str(i)) if nested else path)
    else:
        yield ".".join(path) or None, str(detail), getattr(detail, "code", None) or "invalid"


def item(detail, code, field=None):
    body = {"detail": excerpt_text(detail), "code": str(code)}
    if field:
        body["field"] = excerpt_text(field, FIELD_MAX)
    return body


def error_body(errors):
    """The answer for `errors`, a list of `(field, message, code)`: the first at the top, all
    of them under `errors` when there are several."""
    items = [item(message, code, field) for field, message, code in errors[:ERRORS_MAX]]
    first = dict(items[0])
    named = first["detail"].startswith(first.get("field") or "\0")  # "key: ..." names its field
    if len(errors) > 1:
        detail = first["detail"] if named else f"{first.get('field', 'input')}: {first['detail']}"
        first["detail"] = excerpt_text(f"{detail} ({len(errors) - 1} more error(s))")
        first["errors"] = items
    elif first.get("field") and not named:
        first["detail"] = excerpt_text(f"{first['field']}: {first['detail']}")
    return first


def as_api_exception(exc):
    """Django's own exceptions as the DRF exceptions that carry a status."""
    if isinstance(exc, Http404):
        return exceptions.NotFound()
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, RequestDataTooBig):
        return RequestTooLarge()
    if isinstance(exc, TooManyFieldsSent):
        return exceptions.ValidationError(str(exc), code="too_many_fields")
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            return exceptions.ValidationError(exc.message_dict, code="invalid")
        return exceptions.ValidationError(exc.messages, code="invalid")
    if isinstance(exc, RecursionError):
        # Parsers refuse deep JSON first; this is the guard for a path that did not parse it.
        logger.warning("RecursionError answered as too_deep", exc_info=exc)
        return TooDeep()
    return exc


DOMAIN_STATUS = {ActionDenied: 403, ActionConflict: 409, ActionInvalid: 400}


def domain_status(exc):
    """The HTTP status of a refusal (an `ActionError`): 403 role, 409 state, 400 input; the
    API answers it so, and pages that show a refusal answer the same."""
    return next((s for cls, s in DOMAIN_STATUS.items() if isinstance(exc, cls)), 400)


def exception_handler(exc, context):
    """Every error the API answers, in `ErrorSerializer`'s shape (see its docstring)."""
    if isinstance(exc, InvalidFields):
        return Response(error_body([(e.field, str(e), e.code) for e in exc.errors]), status=400)
    if isinstance(exc, ActionError):
        return Response(error_body([(exc.field, str(exc), exc.code)]), status=domain_status(exc))
    exc = as_api_exception(exc)
    response = drf_exception_handler(exc, context)  # status, headers (WWW-Authenticate, ...)
    if response is None:
        return None
    errors = list(field_errors(exc.detail)) or [(None, "Invalid input.", "invalid")]
    response.data = error_body(errors)
    return response


# --- unrouted paths ---------------------------------------------------------------------------


def _is_api(request):
    return request.path.startswith("/api/")


def not_found(request, exception=None):
    """`handler404`: the error shape under /api/, Django's page elsewhere."""
    if _is_api(request):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    """`handler500`: the error shape under /api/ (never Django's HTML page), its page
    elsewhere."""
    if _is_api(request):
        return JsonResponse({"detail": "Server error.", "code": "server_error"}, status=500)
    return defaults.server_error(request)


# --- the schema -----------------------------------------------------------------------------


def document_integer_range(result, generator, request, public):
    """drf-spectacular postprocessing hook: an integer path or query parameter without bounds
    of its own is a 64-bit signed integer (`INT64`), the range of the database's columns; a
    value beyond it answers 400 (a filter, `IdFilter`) or 404 (an id in the path), so a client
    and a fuzzer know where the boundary lies."""
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if parameter.get("in") in ("path", "query") and schema.get("type") == "integer":
                    for key, value in INT64.items():
                        schema.setdefault(key, value)
    return result


ERROR_REF = {"$ref": "#/components/schemas/Error"}


def document_errors(result, generator, request, public):
    """drf-spectacular postprocessing hook: every operation documents the error answers it may
    give, in the `Error` shape: 401, 403 and 429 always, 404 when its path names an object
    or it has pages, 409 when it changes something, 400 when it takes a body or query
    parameters, 413 and 415 when it takes a body. An operation's own description is kept."""
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            parameters = operation.get("parameters", [])
            statuses = [401, 403, 429]
            # A page past the last, or a cursor that is not one, is a 404 too (DRF's pagination).
            if any(
                p.get("in") == "path" or p.get("name") in ("page", "cursor") for p in parameters
            ):
                statuses.append(404)
            if method != "get":
                statuses.append(409)
            if "requestBody" in operation or any(p.get("in") == "query" for p in parameters):
                statuses.append(400)
            if "requestBody" in operation:
                statuses += [413, 415]
            responses = operation.setdefault("responses", {})
            for code in statuses:
                answer = responses.setdefault(str(code), {"description": REFUSAL_TEXT[code]})
                answer.setdefault("content", {"application/json": {"schema": ERROR_REF}})
    return result
