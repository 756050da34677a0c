"""Sherlock's own case JSONL: one case a line, the case format of docs/checks.md plus `key`.

    {"key": "refund-small", "input": "Refund $20?", "expected": {"output": "Approved."},
     "contexts": ["Refunds under $50 are automatic."], "tags": ["refunds"]}

`key` is required (`id`, the case format's own name, is read when `key` is absent); every
other field is optional, and only the fields a line gives change an existing case.
"""

import json

from evaluations.cases_io import (
    ErrorList,
    FileInvalid,
    JSONRefused,
    Row,
    TooManyErrors,
    _array_items,
    decode,
    json_items,
    loads,
    max_bytes,
    too_large,
)
from sherlock.core.errors import ActionInvalid

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


def read_case_list(data):
    """(rows, errors) of a JSON list of Sherlock case objects: the API's JSON body (bytes, read
    here and nowhere else), or a list a Python caller gives (written as JSON first). The same
    reader as a file's: size, UTF-8, NUL, and per item duplicate members, depth, lone
    surrogates, long integers and IMPORT_MAX_CASES, each error's place the item's number
    ("item 3"), the errors bounded as a file's (ErrorList, FileInvalid past the bound)."""
    if not isinstance(data, bytes | str):
        data = json.dumps(data, ensure_ascii=False)
    size = len(data) if isinstance(data, bytes) else len(data.encode())
    if size > max_bytes():
        raise too_large(size)
    text = decode(data)
    if not text.lstrip().startswith("["):
        try:
            loads(text)
        except (JSONRefused, ValueError) as exc:
            # Not JSON at all: the API's own answer to a body it cannot parse.
            raise ActionInvalid(f"JSON parse error - {exc}", code="parse_error") from None
        raise ActionInvalid(
            "give a file (multipart field `file`) or a JSON list of cases", field="file"
        )
    errors = ErrorList()
    try:
        items = _array_items(text, errors, by_item=True)
    except TooManyErrors:
        raise FileInvalid(errors.listed(stopped=True)) from None
    return rows_from_objects(items, errors, "item"), errors


def read(text, errors):
    where, items = json_items(text, errors)
    return rows_from_objects(items, errors, where)


def write(cases):
    return "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)
