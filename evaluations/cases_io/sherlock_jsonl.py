"""Sherlock's own case JSONL: one case a line, the case format of docs/checks.md plus `key`.

    {"key": "refund-small", "input": "Refund $20?", "expected": {"output": "Approved."},
     "contexts": ["Refunds under $50 are automatic."], "tags": ["refunds"]}

`key` is required (`id`, the case format's own name, is read when `key` is absent); every
other field is optional, and only the fields a line gives change an existing case.
"""

import json

from evaluations.actions._case_fields import CASE_FIELDS
from evaluations.cases_io import Row, RowError, json_items


def rows_from_objects(items, errors, where):
    """Rows of Sherlock case objects (also the API's JSON list of cases)."""
    rows = []
    for n, obj in items:
        unknown = sorted(set(obj) - {"key", "id", *CASE_FIELDS})
        if unknown:
            errors.append(RowError(n, unknown[0], f"unknown field {unknown[0]}", where))
            continue
        key = obj.get("key", obj.get("id"))
        if key is None:
            errors.append(RowError(n, "key", "key: needed (the case's stable id)", where))
            continue
        rows.append(Row(n, key, {k: v for k, v in obj.items() if k in CASE_FIELDS}, where))
    return rows


def read(text, errors):
    where, items = json_items(text, errors)
    return rows_from_objects(items, errors, where)


def write(cases):
    return "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)
