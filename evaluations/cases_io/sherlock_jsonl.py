"""Sherlock's own case JSONL: one case a line, the case format of docs/checks.md plus `key`.

    {"key": "refund-small", "input": "Refund $20?", "expected": {"output": "Approved."},
     "contexts": ["Refunds under $50 are automatic."], "tags": ["refunds"]}

`key` is required (`id`, the case format's own name, is read when `key` is absent); every
other field is optional, and only the fields a line gives change an existing case.
"""

import json

from evaluations.cases_io import Row, json_items

KEYS = ("key", "id")


def rows_from_objects(items, errors, where):
    """Rows of Sherlock case objects (also the API's JSON list of cases). Every field but
    `key` and `id` is handed on as it is, an unknown one too: the case's rules refuse it
    (`content_errors`, "unknown field"), as they refuse a missing key (`key_errors`), together
    with every other error of the row."""
    return [
        Row(
            n, obj.get("key", obj.get("id")), {k: v for k, v in obj.items() if k not in KEYS}, where
        )
        for n, obj in items
    ]


def read(text, errors):
    where, items = json_items(text, errors)
    return rows_from_objects(items, errors, where)


def write(cases):
    return "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)
