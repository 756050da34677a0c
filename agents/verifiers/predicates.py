"""Templates and predicates: how a verifier fills in values from its context and tests what it
read at the destination (the language is described in ``agents.verifiers.spec``).

``render`` fills ``{dotted.names}`` from the verifier context (``case``, ``trial``,
``transcript`` and, for effect verifiers, ``call``); ``json_path`` reads a small JSON path;
``check_predicate`` compares the value found with ``{"path", "op", "value"}``. A missing (or
null) template value or an impossible comparison raises ``VerifierUnavailable``: no verdict,
never ``failed``.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from agents.verifiers.spec import PREDICATE_OPS, VerifierUnavailable

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)\}")


def lookup(context: Any, dotted: str) -> Any:
    """``context["a"]["b"][0]`` for ``"a.b.0"``; raises VerifierUnavailable when absent or null.

    Null is no value either: ``{call.result}`` of a call that returned nothing would otherwise
    become ``WHERE id = NULL`` or ``/refunds/None``, find nothing, and fail an effect that may
    well have happened. Without the receipt, which row is this call's cannot be said."""
    value = context
    for part in dotted.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise VerifierUnavailable(f"template value {{{dotted}}} is missing")
    if value is None:
        raise VerifierUnavailable(f"template value {{{dotted}}} is null")
    return value


def render(template: Any, context: Mapping, quote: bool = False) -> Any:
    """Fill ``{dotted.names}`` in strings (recursively in lists and objects). A string that is
    exactly one placeholder keeps the value's type; ``quote`` URL-quotes embedded values."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole:
            value = lookup(context, whole.group(1))
            return urllib.parse.quote(str(value), safe="") if quote else value

        def fill(match):
            value = str(lookup(context, match.group(1)))
            return urllib.parse.quote(value, safe="") if quote else value

        return _PLACEHOLDER.sub(fill, template)
    if isinstance(template, list | tuple):
        return [render(item, context, quote) for item in template]
    if isinstance(template, Mapping):
        return {key: render(value, context, quote) for key, value in template.items()}
    return template


_PATH_PART = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\[\"([^\"]*)\"\]")


def json_path(document: Any, path: str) -> tuple[bool, Any]:
    """A small JSON path: ``$``, ``.name``, ``[index]`` and ``["key"]``. Returns (found, value)."""
    if not isinstance(path, str) or not path.startswith("$"):
        raise VerifierUnavailable(f"predicate path must start with $: {path!r}")
    rest, value = path[1:], document
    while rest:
        match = _PATH_PART.match(rest)
        if not match:
            raise VerifierUnavailable(f"cannot read predicate path {path!r}")
        name, index, quoted = match.groups()
        rest = rest[match.end() :]
        key = name if name is not None else quoted
        if key is not None:
            if not isinstance(value, Mapping) or key not in value:
                return False, None
            value = value[key]
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                return False, None
            value = value[int(index)]
    return True, value


def check_predicate(predicate: Any, document: Any, context: Mapping) -> tuple[bool, Any]:
    """Test ``{"path", "op", "value"}`` against ``document``; returns (passed, observed value).
    A value that is absent fails every op but ``exists`` (which it fails too)."""
    if not isinstance(predicate, Mapping):
        raise VerifierUnavailable("the verifier needs a predicate {path, op, value}")
    op = predicate.get("op", "eq")
    if op not in PREDICATE_OPS:
        raise VerifierUnavailable(f"predicate op must be one of {', '.join(PREDICATE_OPS)}")
    found, observed = json_path(document, predicate.get("path", "$"))
    if op == "exists" or not found:
        return found, observed
    if op == "truthy":
        return bool(observed), observed
    expected = render(predicate.get("value"), context)
    try:
        passed = {
            "eq": lambda: _same(observed, expected),
            "ne": lambda: not _same(observed, expected),
            "gt": lambda: observed > expected,
            "gte": lambda: observed >= expected,
            "lt": lambda: observed < expected,
            "lte": lambda: observed <= expected,
            "in": lambda: any(_same(observed, item) for item in expected),
            "contains": lambda: expected in observed,
        }[op]()
    except TypeError:
        raise VerifierUnavailable(
            f"cannot compare {observed!r} with {expected!r} using {op}"
        ) from None
    return bool(passed), observed


def _same(left: Any, right: Any) -> bool:
    # 40 and "40.00" from a database or an API are the same amount; compare numbers as numbers.
    try:
        return float(left) == float(right) and not isinstance(left, bool | type(None))
    except (TypeError, ValueError):
        return left == right
