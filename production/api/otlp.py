"""The OTLP/HTTP traces receiver: `POST /api/v1/v1/traces` (docs/production.md, "Sending
traces").

An exporter configured with `OTEL_EXPORTER_OTLP_ENDPOINT=http://sherlock/api/v1` appends the
signal's path, `v1/traces`, to that base (the OTLP exporter specification), hence the doubled
`v1`: the first is Sherlock's API prefix, the second OTLP's. Authentication is the API's own
(`Authorization: Token <key>`, which `OTEL_EXPORTER_OTLP_HEADERS` sends), with the key as this
process verified it a moment ago and re-checked by one statement on every call
(`governance.api.authentication.ExportKeyAuthentication`: a revoked key writes nothing from
the next call on); every answer, the
refusals included, is OTLP's (`production.traces.otlp`) in the request's encoding, not the API's
error shape, because an exporter reads that and nothing else. The endpoint is therefore left out of
the OpenAPI schema: its contract is OTLP's protobuf definition.
"""

import logging
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from google.rpc import code_pb2
from rest_framework import exceptions
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from governance.api.authentication import ExportKeyAuthentication
from production.traces import otlp
from production.traces.ingest import ingest

logger = logging.getLogger("sherlock.production")

# DRF exceptions as OTLP's gRPC codes (the Status body's `code`).
_GRPC_CODES = {
    401: code_pb2.UNAUTHENTICATED,
    403: code_pb2.PERMISSION_DENIED,
    405: code_pb2.UNIMPLEMENTED,
    413: code_pb2.RESOURCE_EXHAUSTED,
    415: code_pb2.INVALID_ARGUMENT,
    429: code_pb2.RESOURCE_EXHAUSTED,
}


class OTLPThrottle(UserRateThrottle):
    """Export calls have their own rate (`SHERLOCK_OTLP_RATE`): a fleet of exporters under one
    key sends more calls than a person's scripts. A 429 is one OTLP exporters retry."""

    scope = "otlp"


class OTLPTracesView(APIView):
    """Receive an `ExportTraceServiceRequest` and answer an `ExportTraceServiceResponse`."""

    authentication_classes = [ExportKeyAuthentication]  # an exporter sends a key, no session
    parser_classes: list[Any] = []  # the body is read here, bounded, in OTLP's two encodings
    throttle_classes = [OTLPThrottle]
    schema = None  # not in the OpenAPI schema: OTLP defines this endpoint (module docstring)

    def post(self, request):
        media = otlp.media_type(request.META.get("CONTENT_TYPE"))
        if media not in otlp.MEDIA_TYPES:
            raise otlp.OTLPError(
                415, "Content-Type must be application/x-protobuf or application/json."
            )
        limit = settings.SHERLOCK_API_MAX_BODY_BYTES
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit:
            raise otlp.OTLPError(
                413, f"The body is larger than {limit} bytes.", code_pb2.RESOURCE_EXHAUSTED
            )
        raw = request._request.read(limit + 1)  # a body without a truthful length is bounded too
        body = otlp.read_body(raw, request.META.get("HTTP_CONTENT_ENCODING"))
        message = otlp.decode_request(body, media)
        outcome = ingest(message, request.user)
        content, content_type = otlp.encode_response(
            media, outcome.rejected, outcome.error_message if outcome.rejected else ""
        )
        return HttpResponse(content, content_type=content_type, status=200)

    def handle_exception(self, exc):
        media = otlp.media_type(self.request.META.get("CONTENT_TYPE"))
        headers = {}
        if isinstance(exc, otlp.OTLPError):
            error = exc
        elif isinstance(exc, exceptions.APIException):
            if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
                exc.status_code = 401
                headers["WWW-Authenticate"] = 'Token realm="api"'
            if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
                headers["Retry-After"] = str(int(exc.wait) + 1)
            code = _GRPC_CODES.get(exc.status_code, code_pb2.INVALID_ARGUMENT)
            error = otlp.OTLPError(exc.status_code, str(exc.detail), code)
        else:
            raise exc
        content, content_type = otlp.encode_status(media, error)
        return HttpResponse(
            content, content_type=content_type, status=error.status, headers=headers
        )
