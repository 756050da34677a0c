"""Cases in and out of Sherlock: one reader per file format, two writers, and detection.

Each format has its own module (`sherlock_jsonl`, `csv_format`, `openai_evals`, `langfuse`,
`promptfoo`; docs/cases.md describes every one with an example). A reader turns a file's text
into `Row`s (the case's `key`, the content fields of `evaluations.actions._case_fields` that
the file gives, and where the row stands in the file) plus the `RowError`s of what it could not
read; it never stops at the first bad row, nor at a row's first bad field (a row with errors is
handed on as `faulty`, with the fields that could be read), so an import reports every error at
once. The content is validated afterwards by `ImportCases`, with the same `key_errors` and
`content_errors` as every admin and API edit. Writers exist for Sherlock's own JSONL and CSV:
`write_cases` is what `export_cases`, the export API and the admin action call.

Formats without a key of their own (OpenAI evals, promptfoo, a Langfuse item without `id`) get
a key derived from the case's input, `derived_key`, so importing the same file twice upserts
instead of duplicating.
"""

import csv
import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import PurePath

from evaluations.actions._case_fields import CASE_FIELDS


@dataclass
class Row:
    """One case read from a file: `fields` holds only the fields the file gives (an import
    leaves the others of an existing case as they are). `faulty`: the reader found errors in
    the row (they are in its errors); the row is still handed on, so that `ImportCases`
    validates what could be read and names every error of the row at once, and never
    written."""

    line: int
    key: object
    fields: dict = field(default_factory=dict)
    where: str = "line"  # "line" (JSONL), "row" (CSV, the header is row 1) or "item" (JSON)
    faulty: bool = False


@dataclass
class RowError:
    """What is wrong with one row: its place in the file and the field at fault."""

    line: int
    field: str
    message: str
    where: str = "line"

    def __str__(self):
        return f"{self.where} {self.line}: {self.message}"

    def as_dict(self):
        return {
            "line": self.line,
            "detail": str(self),
            "code": "invalid",
            "field": self.field,
        }


class UnknownFormat(ValueError):
    """The format was neither named nor recognisable from the file name and content."""


def derived_key(prefix, value):
    """A stable key for a case whose format has none: the prefix and the first 12 hex digits
    of the SHA-256 of its input as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{prefix}-{hashlib.sha256(canonical.encode()).hexdigest()[:12]}"


def parse_json_lines(text, errors):
    """(line number, object) for every non-blank line of JSON Lines text; a line that is not
    a JSON object becomes a RowError."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(RowError(number, "", f"not JSON ({exc.msg}, column {exc.colno})"))
            continue
        if not isinstance(obj, dict):
            errors.append(RowError(number, "", "must be a JSON object"))
            continue
        yield number, obj


def json_items(text, errors):
    """The objects of a JSON document or of JSON Lines, each with its place: a JSON array (or
    `{"data": [...]}`, the shape of Langfuse's API answers) numbers its items ("item N"), JSON
    Lines its lines. Returns (where, [(n, obj)])."""
    if text.lstrip().startswith("["):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            errors.append(RowError(exc.lineno, "", f"not JSON ({exc.msg}, column {exc.colno})"))
            return "line", []
        return "item", _numbered(doc, errors)
    try:
        doc = json.loads(text)  # JSON Lines of two or more lines fail fast, at line 2
    except json.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("data"), list):
        return "item", _numbered(doc["data"], errors)
    return "line", list(parse_json_lines(text, errors))


def _numbered(items, errors):
    out = []
    for n, obj in enumerate(items, start=1):
        if isinstance(obj, dict):
            out.append((n, obj))
        else:
            errors.append(RowError(n, "", "must be a JSON object", where="item"))
    return out


def csv_records(text, errors):
    """(row number, cells) of CSV text, the header being row 1; the delimiter is sniffed from
    the header among comma, semicolon and tab (spreadsheets in some locales write `;`). A
    record the csv module cannot read (a NUL byte, a cell over its size limit) ends the
    reading with a RowError naming its row."""
    first = text.split("\n", 1)[0]
    try:
        dialect = csv.Sniffer().sniff(first, delimiters=",;\t")
        delimiter = dialect.delimiter
    except csv.Error:
        delimiter = ","
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    number = 0
    while True:
        number += 1
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            errors.append(RowError(number, "", f"not CSV ({exc})", "row"))
            return
        yield number, values


def _readers():
    from evaluations.cases_io import csv_format, langfuse, openai_evals, promptfoo, sherlock_jsonl

    return {
        "jsonl": sherlock_jsonl.read,
        "csv": csv_format.read,
        "openai-evals": openai_evals.read,
        "langfuse": langfuse.read,
        "promptfoo": promptfoo.read,
    }


READ_FORMATS = ("jsonl", "csv", "openai-evals", "langfuse", "promptfoo")
WRITE_FORMATS = ("jsonl", "csv")
FORMAT_LABELS = {
    "jsonl": "Sherlock cases (JSONL)",
    "csv": "Sherlock cases (CSV)",
    "openai-evals": "OpenAI evals (JSONL)",
    "langfuse": "Langfuse dataset items (JSON or JSONL)",
    "promptfoo": "promptfoo tests (CSV)",
}


def decode(data):
    """Text from an uploaded file's bytes: UTF-8, with or without the BOM spreadsheets write."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnknownFormat(f"the file is not UTF-8 text (byte {exc.start})") from None


def detect_format(text, filename=None):
    """The format of a file, from its name and first record (docs/cases.md, "Detection").

    A `.csv` file (or text whose first line is not JSON) is Sherlock CSV when its header has a
    `key` column, else promptfoo. JSON is OpenAI evals when its first object has `ideal` or
    chat messages as `input`; Langfuse when it has `expectedOutput`, `datasetId` or
    `metadata`, or the document is a JSON array or `{"data": [...]}`; Sherlock JSONL when it
    has `key` or another case field. Anything else is refused: name the format."""
    suffix = PurePath(filename).suffix.lower() if filename else ""
    stripped = text.lstrip()
    looks_json = stripped[:1] in ("{", "[")
    if suffix == ".csv" or (suffix not in (".json", ".jsonl", ".ndjson") and not looks_json):
        from evaluations.cases_io.csv_format import header_of

        header = header_of(text)
        if not header:
            raise UnknownFormat("the file is empty")
        return "csv" if "key" in header else "promptfoo"
    if stripped.startswith("["):
        return "langfuse"
    errors = []
    where, items = json_items(text, errors)
    if where == "item":
        return "langfuse"
    if not items:
        raise UnknownFormat("no JSON object found; name the format")
    first = items[0][1]
    messages = first.get("input")
    if "ideal" in first or (
        isinstance(messages, list) and messages and all(_is_message(m) for m in messages)
    ):
        return "openai-evals"
    if {"expectedOutput", "datasetId", "metadata"} & set(first):
        return "langfuse"
    if "key" in first or set(first) & (set(CASE_FIELDS) - {"input"}):
        return "jsonl"
    raise UnknownFormat(
        f"cannot tell the format from the first record; name it (one of {', '.join(READ_FORMATS)})"
    )


def _is_message(value):
    return isinstance(value, dict) and "role" in value and "content" in value


def read_cases(data, fmt=None, filename=None):
    """(format, rows, errors) of a file's bytes or text; `fmt` None detects it. UnknownFormat
    when the format is not one of READ_FORMATS or cannot be detected."""
    text = decode(data)
    if fmt is None:
        fmt = detect_format(text, filename)
    readers = _readers()
    if fmt not in readers:
        raise UnknownFormat(f"unknown format {fmt!r} (one of {', '.join(READ_FORMATS)})")
    errors = []
    rows = readers[fmt](text, errors)
    errors.sort(key=lambda error: error.line)
    return fmt, rows, errors


def case_dicts(dataset_version):
    """A version's cases as Sherlock's case dicts (`key` and every content field), in key
    order: what the writers write and `diff_versions` compares. One query."""
    return [
        {"key": cv.case.key, **{name: getattr(cv, name) for name in CASE_FIELDS}}
        for cv in dataset_version.case_versions.select_related("case").order_by("case__key")
    ]


def write_cases(cases, fmt):
    """Text of `cases` (case dicts) in a writable format: "jsonl" or "csv"."""
    from evaluations.cases_io import csv_format, sherlock_jsonl

    writers = {"jsonl": sherlock_jsonl.write, "csv": csv_format.write}
    if fmt not in writers:
        raise UnknownFormat(f"cannot write {fmt!r} (one of {', '.join(WRITE_FORMATS)})")
    return writers[fmt](cases)


def export_cases(dataset_version, fmt):
    """A dataset version's cases in a writable format (`manage.py export_cases`, the API's
    `GET /api/v1/datasets/{slug}/export/`, the admin's "Export cases" action)."""
    return write_cases(case_dicts(dataset_version), fmt)


MEDIA_TYPES = {
    "jsonl": "application/x-ndjson; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
}


def version_to_export(dataset, number=None):
    """Version `number` of `dataset`; without a number, the draft if there is one, else the
    latest frozen version (what `export_cases` and the export API read). None when missing."""
    versions = dataset.versions.all()
    if number is not None:
        return versions.filter(number=number).first()
    return versions.filter(frozen_at__isnull=True).first() or dataset.latest_frozen
