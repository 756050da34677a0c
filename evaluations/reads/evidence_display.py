"""How a trial's evidence reads on the trial page (`evaluations.views.runs.trial_detail`).

Every check kind stores what its verdict rests on in ``CheckResult.evidence`` (see
``evaluations/checks/*.py``). The shapes repeat across kinds, so they are rendered by shape,
not by kind, and a new kind's evidence shows without a change here:

- two lists that are compared: ``expected``/``called`` (tools_used), ``reference``/
  ``predicted`` (trajectory), ``expected``/``actual`` (columns, chart type) -> side by side;
- a list of objects (faithfulness ``claims`` with their verdicts, context_precision
  ``contexts``, tool effects) -> a table, with verdict-like columns as status badges;
- a list of rows (``missing_rows``/``unexpected_rows`` of table checks) -> a table under the
  evidence's ``columns``;
- ``quotes`` (custom checks) -> the quoted spans highlighted in the output, verbatim up to
  whitespace as ``evaluations.checks.custom.quote_found`` reads them;
- ``raw`` (the judge's unusable answer) and anything deeper -> pretty JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.utils.html import escape
from django.utils.safestring import mark_safe

# Columns whose values are verdicts: shown as status badges (the CSS classes of base.html).
VERDICT_COLUMNS = {"verdict", "state", "useful", "relevant", "status"}
VERDICT_CLASSES = {
    "supported": "pass",
    "verified": "pass",
    "yes": "pass",
    True: "pass",
    "contradicted": "fail",
    "failed": "fail",
    "no": "fail",
    False: "fail",
    "unsupported": "error",
    "unknown": "error",
    "idk": "skipped",
}
PAIRS = (("expected", "called"), ("reference", "predicted"), ("expected", "actual"))
_QUOTE_MARKS = "\"'“”‘’«»"
_ELLIPSIS = re.compile(r"\.\.\.|…")


def pretty(value: Any) -> str:
    """A value as a person reads it: text as is, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def compact(value: Any) -> str:
    """A value on one line: text as is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _cell(column: str, value: Any) -> dict:
    css = VERDICT_CLASSES.get(value) if column in VERDICT_COLUMNS and _scalar(value) else None
    return {"text": pretty(value) if value is not None else "", "css": css}


def _table(items: list[dict]) -> dict:
    columns = list(dict.fromkeys(k for item in items for k in item))
    rows = [[_cell(c, item.get(c)) for c in columns] for item in items]
    return {"columns": columns, "rows": rows}


def evidence_blocks(evidence: Any) -> list[dict]:  # noqa: C901
    """The evidence as blocks for `partials/evidence.html`, each ``{"kind", "label", ...}``:
    ``facts`` (the scalar values, first), ``pair``, ``table``, ``list`` or ``json``. The
    ``quotes`` are listed here and marked in the output by ``highlight_quotes``."""
    if not isinstance(evidence, dict):
        return [{"kind": "json", "label": "evidence", "text": pretty(evidence)}] if evidence else []
    blocks: list[dict[str, Any]] = []
    facts: list[Any] = []
    used: set[str] = set()
    for left, right in PAIRS:
        if left in used or right in used:
            continue
        if isinstance(evidence.get(left), list) and isinstance(evidence.get(right), list):
            blocks.append(
                {
                    "kind": "pair",
                    "label": f"{left} vs {right}",
                    "left": left,
                    "right": right,
                    "left_items": [pretty(v) for v in evidence[left]],
                    "right_items": [pretty(v) for v in evidence[right]],
                }
            )
            used.update((left, right))
    columns = evidence.get("columns")
    for key, value in evidence.items():
        if key in used:
            continue
        if key == "raw" or (isinstance(value, dict) and not all(map(_scalar, value.values()))):
            blocks.append({"kind": "json", "label": key, "text": pretty(value)})
        elif isinstance(value, dict):
            blocks.append(
                {"kind": "table", "label": key, **_table([value])} if value else _empty(key)
            )
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            blocks.append({"kind": "table", "label": key, **_table(value)})
        elif isinstance(value, list) and value and all(isinstance(v, list) for v in value):
            width = max(len(v) for v in value)
            header = columns if isinstance(columns, list) and len(columns) == width else None
            blocks.append(
                {
                    "kind": "table",
                    "label": key,
                    "columns": header or [f"#{i + 1}" for i in range(width)],
                    "rows": [[_cell("", c) for c in row] for row in value],
                }
            )
        elif isinstance(value, list):
            if value and not all(map(_scalar, value)):
                blocks.append({"kind": "json", "label": key, "text": pretty(value)})
            else:
                blocks.append({"kind": "list", "label": key, "items": [pretty(v) for v in value]})
        else:
            facts.append({"label": key, **_cell(key, value)})
    return ([{"kind": "facts", "label": "", "facts": facts}] if facts else []) + blocks


def _empty(key: str) -> dict:
    return {"kind": "list", "label": key, "items": []}


def _quote_pattern(quote: str) -> re.Pattern | None:
    """A quote as a pattern over the output: whitespace runs match any whitespace, quote marks
    around it are dropped, and an elision "..." matches anything between its fragments."""
    fragments = [
        f.strip().strip(_QUOTE_MARKS).strip()
        for f in _ELLIPSIS.split(quote.strip().strip(_QUOTE_MARKS))
    ]
    fragments = [f for f in fragments if f]
    if not fragments:
        return None
    parts = [r"\s+".join(re.escape(word) for word in f.split()) for f in fragments]
    return re.compile(r".*?".join(f"({part})" for part in parts), re.DOTALL)


def highlight_quotes(output: str, quotes: list[str]) -> tuple[str, list[str]]:
    """``output`` as safe HTML with each quoted span in ``<mark>``, and the quotes not found."""
    spans: list[tuple[int, int]] = []
    missing: list[str] = []
    for quote in quotes:
        pattern = _quote_pattern(quote) if isinstance(quote, str) else None
        match = pattern.search(output) if pattern else None
        if match is None:
            missing.append(quote)
            continue
        spans.extend(match.span(i) for i in range(1, (match.lastindex or 0) + 1))
    spans.sort()
    html: list[str] = []
    position = 0
    for start, end in spans:
        start = max(start, position)
        if start >= end:
            continue
        html.append(escape(output[position:start]))
        html.append(f"<mark>{escape(output[start:end])}</mark>")
        position = end
    html.append(escape(output[position:]))
    return mark_safe("".join(html)), missing
