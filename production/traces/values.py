"""Attribute values as the readers take them: JSON written as a string, lists of objects,
text, bounded integers, indexed attributes.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

# 2: GenAI retrieval spans (gen_ai.retrieval.documents) give contexts; 3: one tool call per
# call (requests joined to tool spans), and `sherlock.declared_complete`.
NORMALIZER_VERSION = 3


def indexed_attributes(attrs, prefix):
    """`prefix.N.rest` attributes as a list of `{rest: value}`, by N."""
    head = prefix + "."
    groups: dict[Any, Any] = {}
    for key, value in attrs.items():
        if key.startswith(head):
            index, _, rest = key[len(head) :].partition(".")
            if rest and index.isdigit():
                groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


def index_of(text):
    return int(text) if text.isdigit() else 0


def json_value(value):
    """A JSON document written as a string (attributes are strings) parsed, else as is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        with contextlib.suppress(ValueError, RecursionError):
            return json.loads(value)
    return value


def object_list(value):
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def as_text(value):
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def as_int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 2**31 else None
    if isinstance(value, float) and value.is_integer():
        return as_int(int(value))
    if isinstance(value, str) and value.isdigit():
        return as_int(int(value))
    return None


def sum_present(values):
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def first_present(*values):
    return next((v for v in values if v is not None and v != ""), None)
