"""OTLP/HTTP's wire format, in and out: what an exporter sends to `POST /api/v1/v1/traces` and
what it expects back (the OTLP specification, "OTLP/HTTP"), decoded and encoded with the
official `opentelemetry-proto` messages and protobuf's own JSON mapping.

- Bodies are `application/x-protobuf` (an `ExportTraceServiceRequest`) or `application/json`
  (OTLP's JSON mapping of the same message: lowerCamelCase or original field names, enums as
  integers, and trace and span ids as hex strings, where protobuf's JSON mapping would have
  base64: they are rewritten to base64 before `json_format.ParseDict`). Any other type is 415.
- `Content-Encoding: gzip` is decompressed with a bound: the limit on the body
  (`SHERLOCK_API_MAX_BODY_BYTES`) applies to what it decompresses to as well, so a 10 KB bomb
  that would inflate to 10 GB stops at the limit (413).
- The answer is in the request's encoding: `ExportTraceServiceResponse` (with
  `partial_success` when spans were rejected) on success, `google.rpc.Status` on an error, as
  the specification says; an exporter reads neither Sherlock's error shape nor HTML.
"""

import base64
import binascii
import math
import zlib
from datetime import UTC, datetime, timedelta

from django.conf import settings
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from rest_framework.exceptions import ParseError

from sherlock.core.api.parsers import loads_bounded
from sherlock.core.text import scrub_text

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MEDIA_TYPES = (PROTOBUF, JSON)

# Attribute values nest at most this deep (an array or a key-value list inside another), in
# both encodings: a span or a resource with a deeper value is rejected alone (`TooDeepValue`).
MAX_VALUE_DEPTH = 10
# A JSON body may nest as deep as the deepest valid span needs (an event attribute's value
# nested MAX_VALUE_DEPTH deep: 12 levels of envelope, 4 per key-value list level), and no
# deeper: beyond it, it is refused whole, as protobuf's parser refuses a message nested deeper
# than its own limit.
JSON_MAX_DEPTH = 12 + 4 * (MAX_VALUE_DEPTH + 1)

# The largest signed 64-bit value: a timestamp beyond it is no time a database column keeps.
_INT64_MAX = 2**63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class OTLPError(Exception):
    """A request refused whole: its HTTP status and the message the Status body carries."""

    def __init__(self, status, message, grpc_code=code_pb2.INVALID_ARGUMENT):
        super().__init__(message)
        self.status, self.message, self.grpc_code = status, message, grpc_code


def media_type(content_type):
    """The media type of a Content-Type header, lower-cased, without parameters."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def read_body(raw, content_encoding):
    """The body as sent, decompressed when it is gzip, never more than the limit (413)."""
    limit = settings.SHERLOCK_API_MAX_BODY_BYTES
    if len(raw) > limit:
        raise OTLPError(413, f"The body is larger than {limit} bytes.", code_pb2.RESOURCE_EXHAUSTED)
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return raw
    if encoding != "gzip":
        raise OTLPError(415, f"Content-Encoding {encoding[:40]!r} is not accepted (gzip is).")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        body = inflater.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise OTLPError(400, f"The gzip body does not decompress: {exc}") from None
    if len(body) > limit or inflater.unconsumed_tail:
        raise OTLPError(
            413,
            f"The body decompresses to more than {limit} bytes.",
            code_pb2.RESOURCE_EXHAUSTED,
        )
    if not inflater.eof:
        raise OTLPError(400, "The gzip body is truncated.")
    return body


def decode_request(body, media):
    """The `ExportTraceServiceRequest` in `body`, sent as `media` (OTLPError 400 when it is
    not one)."""
    message = ExportTraceServiceRequest()
    if media == PROTOBUF:
        try:
            message.ParseFromString(body)
        except (DecodeError, RecursionError, ValueError) as exc:
            raise OTLPError(400, f"The body is not an ExportTraceServiceRequest: {exc}") from None
        return message
    try:
        document = loads_bounded(body, recorded=True, max_depth=JSON_MAX_DEPTH)
    except ParseError as exc:  # TooDeep is one too: both are a bad body here
        raise OTLPError(400, f"The body is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise OTLPError(400, "The body must be a JSON object (an ExportTraceServiceRequest).")
    try:
        _hex_ids_to_base64(document)
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, AttributeError) as exc:
        raise OTLPError(400, f"The body is not an ExportTraceServiceRequest: {exc}") from None
    return message


_ID_FIELDS = ("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id")


def _hex_ids_to_base64(document):
    """OTLP/JSON writes ids as hex (the specification's one departure from protobuf's JSON
    mapping); protobuf's parser reads bytes as base64. Spans' and links' ids are rewritten."""

    def rewrite(item):
        if not isinstance(item, dict):
            return
        for name in _ID_FIELDS:
            value = item.get(name)
            if isinstance(value, str) and value:
                try:
                    item[name] = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError:
                    raise ValueError(f"{name} {value[:40]!r} is not hex") from None

    for resource_spans in _list(document, "resourceSpans", "resource_spans"):
        for scope_spans in _list(resource_spans, "scopeSpans", "scope_spans"):
            for span in _list(scope_spans, "spans"):
                rewrite(span)
                for link in _list(span, "links"):
                    rewrite(link)


def _list(item, *names):
    if not isinstance(item, dict):
        return []
    for name in names:
        value = item.get(name)
        if isinstance(value, list):
            return value
    return []


def encode_response(media, rejected=0, error_message=""):
    """An `ExportTraceServiceResponse` in `media`: `partial_success` set when spans were
    rejected (the specification: left unset when all were accepted)."""
    response = ExportTraceServiceResponse()
    if rejected or error_message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = error_message
    return _encode(response, media)


def encode_status(media, error):
    """A `google.rpc.Status` for a refused request, in `media` (protobuf unless JSON)."""
    return _encode(status_pb2.Status(code=error.grpc_code, message=error.message), media)


def _encode(message, media):
    if media == JSON:
        return json_format.MessageToJson(message, indent=None).encode(), JSON
    return message.SerializeToString(), PROTOBUF


class TooDeepValue(ValueError):
    """An attribute value nested deeper than `MAX_VALUE_DEPTH`."""


def any_value(value, depth=0):
    """An OTLP AnyValue as plain JSON: strings, booleans, integers and floats as themselves
    (a non-finite float as its text: JSON has none), arrays as lists, key-value lists as
    objects, bytes as base64, an empty value as null. NUL characters and lone surrogates
    become U+FFFD (`sherlock.core.text`): neither PostgreSQL's text nor its jsonb keep one."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return clean_text(value.string_value)
    if kind == "bool_value":
        return value.bool_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        number = value.double_value
        return number if math.isfinite(number) else str(number)
    if kind in ("array_value", "kvlist_value") and depth >= MAX_VALUE_DEPTH:
        raise TooDeepValue(f"an attribute value nests deeper than {MAX_VALUE_DEPTH} levels")
    if kind == "array_value":
        return [any_value(item, depth + 1) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values, depth + 1)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None


def attributes(key_values, depth=0):
    """OTLP KeyValues as one JSON object (a key given twice: the last value); `TooDeepValue`
    when a value nests deeper than `MAX_VALUE_DEPTH`."""
    return {clean_text(item.key): any_value(item.value, depth) for item in key_values}


clean_text = scrub_text  # recorded text: NUL and lone surrogates become U+FFFD


def hex_id(raw, size):
    """An id's bytes as hex, or None when it is not `size` bytes or all zeros (invalid ids,
    the specification says)."""
    if len(raw) != size or not any(raw):
        return None
    return binascii.hexlify(raw).decode()


def nanos(value):
    """A unix-nanosecond timestamp a BIGINT column keeps (0 when out of range)."""
    return value if 0 < value <= _INT64_MAX else 0


def from_nanos(value):
    """A unix-nanosecond timestamp as an aware datetime (microseconds), None for 0 or a time
    no datetime holds."""
    if not value:
        return None
    try:
        return _EPOCH + timedelta(microseconds=value // 1000)
    except OverflowError:
        return None
