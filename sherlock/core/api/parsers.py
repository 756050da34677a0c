"""The API's body, bounded before it is parsed: the size (`SHERLOCK_API_MAX_BODY_BYTES`, 413) and
the JSON nesting (`limits.JSON_MAX_DEPTH`, 400), NUL characters and duplicate members refused
(`loads_bounded`), for JSON and multipart bodies alike."""

import json
import math
import re
from typing import Any

from django.conf import settings
from rest_framework import exceptions, parsers

from sherlock.core.api.errors import RequestTooLarge, TooDeep, excerpt_text
from sherlock.core.limits import JSON_MAX_DEPTH, excerpt, json_depth
from sherlock.core.text import has_unstorable, scrub


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


def loads_bounded(raw, *, strict=True, max_depth=JSON_MAX_DEPTH, recorded=False):  # noqa: C901
    """`raw` (bytes or text) parsed as JSON, refused as `TooDeep` when it nests deeper than
    `max_depth` (the C parser's RecursionError included) or `ParseError` when it is not
    JSON. NaN and Infinity are refused when `strict`, as DRF's own parser does; an object that
    names a member twice is refused (last-wins would keep a value the sender may not see).
    A NUL or a lone surrogate is refused, as in any authored text, unless the body is
    `recorded` text (a tracer's spans): then each becomes U+FFFD (`sherlock.core.text`)."""

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

    hooks: dict[str, Any] = {"parse_constant": constant, "parse_float": finite} if strict else {}
    hooks["object_pairs_hook"] = members
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
        value = json.loads(text, **hooks)
    except RecursionError:
        raise TooDeep() from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise exceptions.ParseError(excerpt_text(f"JSON parse error - {exc}")) from None
    if json_depth(value) > max_depth:
        raise TooDeep()
    if recorded:
        return scrub(value)
    if has_unstorable(value, surrogates=False):
        raise exceptions.ParseError("JSON strings may not contain NUL (\\u0000) characters.")
    if SURROGATE_ESCAPE.search(text) and not _encodable(value):
        # "\ud800" alone is valid JSON but no text: PostgreSQL refuses it (a 500), SQLite
        # stores what no export can write back.
        raise exceptions.ParseError(
            "JSON strings may not contain a lone surrogate (\\ud800-\\udfff) escape."
        )
    return value


# A \uD800-\uDFFF escape: only then is the parsed value walked for a lone surrogate.
SURROGATE_ESCAPE = re.compile(r"\\[uU][dD][89a-fA-F]")


def _encodable(value):
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


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
