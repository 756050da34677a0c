"""The API's error side: whatever goes wrong with a request, the answer is a 4xx in
one shape (`ErrorSerializer`), documented on every operation of the OpenAPI schema
(`sherlock.core.api.schema.document_errors`), and bad input never reaches a 500.

- `exception_handler` turns domain errors (`sherlock.core.errors`), Django's and DRF's
  exceptions (validation, parse, 401, 403, 404, 405, 406, 413, 415, 429) into that shape;
- `RequestTooLarge` (413) and `TooDeep` (400) are what the parsers raise
  (`sherlock.core.api.parsers`);
- `refusals` names an operation's refusals for `extend_schema`;
- `not_found` and `server_error` answer unrouted `/api/` paths in the shape too.
"""

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import (
    RequestDataTooBig,
    TooManyFieldsSent,
)
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status
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
from sherlock.core.limits import JSON_MAX_DEPTH

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


def refusals(*statuses: int, **texts: str) -> dict[int, OpenApiResponse]:
    """The schema's error responses of an endpoint: `refusals(400, 403)`, each in the
    `ErrorSerializer` shape with the usual description, or one given as `texts["s400"]`."""
    return {
        code: OpenApiResponse(
            ErrorSerializer, description=texts.get(f"s{code}", REFUSAL_TEXT[code])
        )
        for code in statuses
    }


# --- the exception handler ------------------------------------------------------------------


def excerpt_text(text: Any, limit: int = DETAIL_MAX) -> str:
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def field_errors(detail: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str | None, str, str]]:
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


def item(detail: Any, code: Any, field: str | None = None) -> dict[str, str]:
    body = {"detail": excerpt_text(detail), "code": str(code)}
    if field:
        body["field"] = excerpt_text(field, FIELD_MAX)
    return body


def error_body(errors: list[tuple[str | None, str, str]]) -> dict[str, Any]:
    """The answer for `errors`, a list of `(field, message, code)`: the first at the top, all
    of them under `errors` when there are several."""
    items = [item(message, code, field) for field, message, code in errors[:ERRORS_MAX]]
    first: dict[str, Any] = dict(items[0])
    named = first["detail"].startswith(first.get("field") or "\0")  # "key: ..." names its field
    if len(errors) > 1:
        detail = first["detail"] if named else f"{first.get('field', 'input')}: {first['detail']}"
        first["detail"] = excerpt_text(f"{detail} ({len(errors) - 1} more error(s))")
        first["errors"] = items
    elif first.get("field") and not named:
        first["detail"] = excerpt_text(f"{first['field']}: {first['detail']}")
    return first


def as_api_exception(exc: BaseException) -> Any:  # a DRF exception (DRF is untyped here)
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


def domain_status(exc: BaseException) -> int:
    """The HTTP status of a refusal (an `ActionError`): 403 role, 409 state, 400 input; the
    API answers it so, and pages that show a refusal answer the same."""
    return next((s for cls, s in DOMAIN_STATUS.items() if isinstance(exc, cls)), 400)


def exception_handler(exc: BaseException, context: dict[str, Any]) -> Response | None:
    """Every error the API answers, in `ErrorSerializer`'s shape (see its docstring)."""
    if isinstance(exc, InvalidFields):
        return Response(error_body([(e.field, str(e), e.code) for e in exc.errors]), status=400)
    if isinstance(exc, ActionError):
        return Response(error_body([(exc.field, str(exc), exc.code)]), status=domain_status(exc))
    exc = as_api_exception(exc)
    response = drf_exception_handler(exc, context)  # status, headers (WWW-Authenticate, ...)
    if response is None:
        return None
    detail = getattr(exc, "detail", None)  # an APIException, once DRF answered it
    errors = list(field_errors(detail)) or [(None, "Invalid input.", "invalid")]
    response.data = error_body(errors)
    return response


# --- unrouted paths ---------------------------------------------------------------------------


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """`handler404`: the error shape under /api/, Django's page elsewhere."""
    if _is_api(request):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """`handler500`: the error shape under /api/ (never Django's HTML page), its page
    elsewhere."""
    if _is_api(request):
        return JsonResponse({"detail": "Server error.", "code": "server_error"}, status=500)
    return defaults.server_error(request)


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"

    def __init__(self) -> None:
        limit = settings.SHERLOCK_API_MAX_BODY_BYTES
        super().__init__(
            f"The request body is larger than {limit} bytes (SHERLOCK_API_MAX_BODY_BYTES)."
        )


class TooDeep(exceptions.ParseError):
    default_code = "too_deep"

    def __init__(self) -> None:
        super().__init__(f"JSON nested deeper than {JSON_MAX_DEPTH} levels.")
