"""The API's body, bounded before it is parsed: the size (`SHERLOCK_API_MAX_BODY_BYTES`, 413) for
JSON and multipart bodies alike, then JSON read by the one strict reader (`loads_bounded`:
nesting past `limits.JSON_MAX_DEPTH` is 400 `too_deep`; NaN, duplicate members, NUL characters
and the rest are 400 naming their line and column)."""

from typing import Any

from django.conf import settings
from rest_framework import exceptions, parsers

from sherlock.core.api.errors import RequestTooLarge, TooDeep, excerpt_text
from sherlock.core.json_text import JSONRefused, JSONTooDeep, line_and_column, loads
from sherlock.core.limits import JSON_MAX_DEPTH


def refuse_large_body(parser_context: dict[str, Any] | None) -> None:
    """RequestTooLarge when the declared Content-Length exceeds the limit (nothing read)."""
    request = (parser_context or {}).get("request")
    meta = getattr(request, "META", {})
    try:
        length = int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > settings.SHERLOCK_API_MAX_BODY_BYTES:
        raise RequestTooLarge()


def loads_bounded(
    raw: bytes | str, *, recorded: bool = False, max_depth: int = JSON_MAX_DEPTH
) -> Any:
    """`raw` (bytes or text) read by the one JSON reader (`sherlock.core.json_text`): `TooDeep`
    when it nests deeper than `max_depth`, `ParseError` naming the line and column of
    anything else it refuses (text that is not UTF-8 or not JSON, a member named twice, NaN,
    Infinity, a number out of range, a NUL or a lone surrogate). A `recorded` body (a tracer's
    spans) keeps its NULs and lone surrogates, each replaced by U+FFFD."""
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise exceptions.ParseError(
            f"JSON parse error - not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from None
    try:
        return loads(text, recorded=recorded, max_depth=max_depth)
    except JSONTooDeep:
        raise TooDeep() from None
    except JSONRefused as exc:
        where = ""
        if exc.offset is not None:
            line, column = line_and_column(text, exc.offset)
            where = f" (line {line}, column {column})"
        raise exceptions.ParseError(
            excerpt_text(f"JSON parse error - {exc.message}{where}")
        ) from None


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with the body bounded (413) and the nesting bounded (400 `too_deep`),
    so a 10 KB `[[[[...` answers 400 instead of a RecursionError's 500."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        refuse_large_body(parser_context)
        limit = settings.SHERLOCK_API_MAX_BODY_BYTES
        raw = stream.read(limit + 1)  # a body without a (truthful) length is bounded too
        if len(raw) > limit:
            raise RequestTooLarge()
        return loads_bounded(raw)


class MultiPartParser(parsers.MultiPartParser):
    """File uploads (the case import), bounded like JSON bodies; Django's parser reads no more
    than the Content-Length it was given."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        refuse_large_body(parser_context)
        return super().parse(stream, media_type, parser_context)
