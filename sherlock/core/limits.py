"""Size limits of what callers may send, in one place: every text and JSON document a
user writes has a documented bound, checked by the domain actions before anything is written
(so the admin, the API, the commands and the tasks all obey it) and mirrored as `max_length`
in the API's serializers (so the OpenAPI schema documents it).

Why bounds at all: reasons, notes and configs go into the append-only audit log for ever, and
a document nested thousands deep makes Python's recursive code (the JSON parser, jsonschema,
`copy.deepcopy`) overflow the stack. The request body as a whole is bounded by the
`SHERLOCK_API_MAX_BODY_BYTES` setting, checked by the API's parsers before reading
(`sherlock.core.api`). Errors quote input only through `excerpt`, so a refusal never echoes a
100,000-character value back.
"""

import json
import logging
from collections.abc import Iterable
from typing import Any

from sherlock.core.errors import ActionInvalid

# Free text, in characters.
SLUG_MAX = 100  # agent and dataset slugs (the model's own max_length)
NAME_MAX = 200  # agent, dataset, policy names (the model's own max_length)
VERSION_NAME_MAX = 200  # an agent version's name: a git commit, a tag (the model's max_length)
REASON_MAX = 2_000  # bypass, publish, retire, rollback and approval reasons
NOTE_MAX = 10_000  # version notes, dataset version notes, hand-label notes
DESCRIPTION_MAX = 10_000  # agent and dataset descriptions
CRITERION_MAX = 10_000  # a check's plain-language criterion and other free text in params

# JSON documents, in bytes of their compact JSON encoding, and in nesting depth.
CONFIG_MAX_BYTES = 64 * 1024  # an agent version's adapter config
PARAMS_MAX_BYTES = 64 * 1024  # a check's params, a case's overrides
CASE_FIELD_MAX_BYTES = 256 * 1024  # one field of a case (input, expected, contexts, ...)
JSON_MAX_DEPTH = 32  # arrays and objects inside each other, anywhere in a request

# An imported file of cases (its size is the API's body limit, SHERLOCK_API_MAX_BODY_BYTES):
# at most this many cases, so that 10 MB of one-key rows cannot hold 700,000 of them in memory
# at once (an import validates every row before it writes any); five times bench/import_cases.
IMPORT_MAX_CASES = 50_000

# How much of a caller's input an error message may quote.
EXCERPT_MAX = 60


def excerpt(value: Any, limit: int = EXCERPT_MAX) -> str:
    """`value` as an error message may quote it: its repr, cut to `limit` characters with the
    full length said, so a refusal never echoes a long input back."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(text) if isinstance(value, str) else text
    return f"{text[:limit]!r}... ({len(text)} characters)"


def truncate(value: Any, limit: int) -> str:
    """`value` as text, at most `limit` characters (an ellipsis marks the cut): what a record
    such as an audit entry keeps of an input it names."""
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_depth(value: Any) -> int:
    """How deep arrays and objects nest in `value` (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_text(field: str, value: Any, maximum: int) -> Any:
    """ActionInvalid naming `field` when the text `value` is longer than `maximum` characters."""
    if isinstance(value, str) and len(value) > maximum:
        raise ActionInvalid(
            f"{field}: at most {maximum} characters (got {len(value)})",
            code="too_long",
            field=field,
        )
    return value


def check_document(field: str, value: Any, max_bytes: int, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """ActionInvalid naming `field` when the JSON document `value` nests deeper than
    `max_depth` or is larger than `max_bytes` once encoded."""
    if json_depth(value) > max_depth:
        raise ActionInvalid(
            f"{field}: nested deeper than {max_depth} levels", code="too_deep", field=field
        )
    size = len(json.dumps(value, separators=(",", ":"), default=str).encode())
    if size > max_bytes:
        raise ActionInvalid(
            f"{field}: at most {max_bytes} bytes of JSON (got {size})",
            code="too_large",
            field=field,
        )
    return value


LOG_LINE_MAX = 2000


class ClipLogRecords(logging.Filter):
    """Cuts a log record's message to `LOG_LINE_MAX` characters, the length said: Django's
    request log quotes the path of every 404 ("Not Found: /api/v1/runs/<100,000 characters>/"),
    and an input that long must not fill the log. Installed on the console handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if len(message) > LOG_LINE_MAX:
            record.msg = f"{message[:LOG_LINE_MAX]}... ({len(message)} characters)"
            record.args = ()
        return True
