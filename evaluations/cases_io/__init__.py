"""Cases in and out of Sherlock: one reader per file format, two writers, and detection.

Each format has its own module (`sherlock_jsonl`, `csv_format`, `openai_evals`, `langfuse`,
`promptfoo`; docs/cases.md describes each with an example). A reader turns a file's text into
`Row`s (the case's key, the content fields the file gives, the row's place) plus the
`RowError`s of what it could not read; it never stops at the first bad row nor at a row's first
bad field, so an import reports every error at once. The content is validated afterwards by
`ImportCases`, with the same rules as every admin and API edit. `write_cases` writes Sherlock's
own JSONL and CSV (the export command, API and admin action).

Every import path reads a file through this module and nothing else (docs/cases.md, "Limits"):
`read_upload` refuses a file over the size limit before reading it, `decode` names the line of
a byte that is not UTF-8 and of a NUL, JSON is read by the one strict reader
(`sherlock.core.json_text`), `IMPORT_MAX_CASES` bounds the records, and `csv_records` reads
cells up to the file limit, so the case's own field limit names a long cell. A format without a
key of its own gets one derived from the case's input (`derived_key`), so importing a file
twice upserts instead of duplicating.
"""

import csv
import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from django.conf import settings

from evaluations.actions.case_fields import CASE_FIELDS
from sherlock.core.errors import ActionInvalid
from sherlock.core.json_text import JSONRefused, after_space, check_decoded, decode_at, loads
from sherlock.core.limits import IMPORT_MAX_CASES, excerpt


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


IMPORT_MAX_ERRORS = 100  # errors an import lists; the reading stops at the next one
ROW_MAX_ERRORS = 10  # errors listed for one row; the rest of the row's are counted


class TooManyErrors(Exception):
    """The import has IMPORT_MAX_ERRORS errors: the reading stops (`ErrorList.listed`)."""


class ErrorList(list):
    """The RowErrors of one import, bounded (docs/cases.md, "Limits"): at most ROW_MAX_ERRORS
    of one row are kept, the row's others only counted (`listed` says "and N more"), and the
    error past IMPORT_MAX_ERRORS raises TooManyErrors, so a file of 10 MB of commas is not
    10 million errors in memory and in the answer."""

    def __init__(self, errors=()):
        super().__init__()
        self.per_row = {}
        self.hidden = {}
        self += errors

    def append(self, error):
        place = (error.where, error.line)
        if self.per_row.get(place, 0) >= ROW_MAX_ERRORS:
            self.hidden[place] = self.hidden.get(place, 0) + 1
            return
        if len(self) >= IMPORT_MAX_ERRORS:
            raise TooManyErrors()
        self.per_row[place] = self.per_row.get(place, 0) + 1
        super().append(error)

    def extend(self, errors):
        for error in errors:
            self.append(error)

    def __iadd__(self, errors):  # type: ignore[misc]  # adds any iterable, as list's own
        self.extend(errors)
        return self

    def listed(self, stopped=False):
        """The errors to show, by line: those kept, one "and N more" for each row that had
        more than ROW_MAX_ERRORS, and when `stopped`, where the reading stopped."""
        out = list(self)
        for (where, line), count in self.hidden.items():
            out.append(RowError(line, "", f"and {count} more error(s) on this {where}", where))
        out.sort(key=lambda error: error.line)
        if stopped:
            last = out[-1] if out else RowError(1, "", "")
            message = f"more than {IMPORT_MAX_ERRORS} errors: the reading stopped here"
            out.append(RowError(last.line, "", message, last.where))
        return out


class UnknownFormat(ValueError):
    """The format was neither named nor recognisable from the file name and content."""


class FileInvalid(ValueError):
    """The file cannot be read at all (not UTF-8, a NUL character): `errors` names the line."""

    def __init__(self, errors):
        self.errors = errors
        super().__init__(str(errors[0]))


def max_bytes():
    """The size limit of an imported file, in bytes: the API's body limit
    (`SHERLOCK_API_MAX_BODY_BYTES`), for the command and the admin page too."""
    return settings.SHERLOCK_API_MAX_BODY_BYTES


def too_large(size=None):
    got = f" (got {size})" if size is not None else ""
    return ActionInvalid(
        f"file: at most {max_bytes()} bytes{got} (SHERLOCK_API_MAX_BODY_BYTES)",
        code="too_large",
        field="file",
    )


def read_upload(handle, size=None):
    """The bytes of an uploaded or opened file, refused (ActionInvalid `too_large`) when it is
    over `max_bytes()`: by its `size` (an upload's, a file's `fstat`) before anything is read,
    and in any case after reading at most one byte more than the limit."""
    limit = max_bytes()
    if size is not None and size > limit:
        raise too_large(size)
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise too_large()
    return data


def too_many(number, where="line", limit=None):
    """FileInvalid at the record past IMPORT_MAX_CASES (or `limit`): the reading stops there."""
    message = f"more than {limit or IMPORT_MAX_CASES} cases in one file: split it"
    return FileInvalid([RowError(number, "", message, where)])


def derived_key(prefix, value):
    """A stable key for a case whose format has none: the prefix and the first 12 hex digits
    of the SHA-256 of its input as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{prefix}-{hashlib.sha256(canonical.encode()).hexdigest()[:12]}"


def _line_errors(exc, number, where="line"):
    return RowError(number, exc.field.split(".")[0], exc.message, where)


def lines(text):
    """(line number, line) of `text`, cut at "\\n" only (a JSON string may hold U+2028, which
    `str.splitlines` would cut at), lazily: a file is never copied into a list of lines."""
    start, number = 0, 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        number += 1
        yield number, text[start:end].removesuffix("\r")
        start = end + 1


def parse_json_lines(text, errors):
    """(line number, object) for every non-blank line of JSON Lines text; a line that is not
    a JSON object, or that `loads` refuses, becomes a RowError naming the line (and field)."""
    read = 0
    for number, line in lines(text):
        if not line.strip():
            continue
        read += 1
        if read > IMPORT_MAX_CASES:
            raise too_many(number)
        try:
            obj = loads(line)
        except JSONRefused as exc:
            errors.append(_line_errors(exc, number))
            continue
        if not isinstance(obj, dict):
            errors.append(RowError(number, "", "must be a JSON object"))
            continue
        yield number, obj


def _array_items(text, errors, by_item=False):
    """(item number, object) of a JSON array document, item by item (so a bad item is named,
    with its line, and the others are still read). `by_item`: an error's place is the item's
    number, not the line (the API's JSON body has no lines a sender wrote)."""
    at = after_space(text, text.index("[") + 1)
    line, counted = 1, 0
    items: list[Any] = []
    if text.startswith("]", at):
        return items
    n = 0
    while True:
        n += 1
        if n > IMPORT_MAX_CASES:
            raise too_many(n, "item")
        line += text.count("\n", counted, at)
        counted = at
        try:
            value, end = decode_at(text, at)
            check_decoded(value, text, at)
        except JSONRefused as exc:
            field = exc.field.split(".")[0]
            if by_item:
                errors.append(RowError(n, field, exc.message, "item"))
            else:
                place = line + text.count("\n", at, exc.offset) if exc.offset else line
                errors.append(RowError(place, field, f"{exc.message} (item {n})"))
            return items  # where the next item starts is not known
        if isinstance(value, dict):
            items.append((n, value))
        else:
            errors.append(RowError(n, "", "must be a JSON object", "item"))
        at = after_space(text, end)
        if text.startswith(",", at):
            at = after_space(text, at + 1)
            continue
        if text.startswith("]", at) and not text[at + 1 :].strip(" \t\r\n"):
            return items
        line += text.count("\n", counted, at)
        missing = "not JSON (a `,` or the closing `]` is missing)"
        errors.append(RowError(n, "", missing, "item") if by_item else RowError(line, "", missing))
        return items


def json_items(text, errors):
    """The objects of a JSON document or of JSON Lines, each with its place: a JSON array (or
    `{"data": [...]}`, the shape of Langfuse's API answers) numbers its items ("item N"), JSON
    Lines its lines. Returns (where, [(n, obj)])."""
    if text.lstrip().startswith("["):
        return "item", _array_items(text, errors)
    try:
        doc = loads(text)  # JSON Lines of two or more lines fail fast, at line 2
    except JSONRefused as exc:
        doc = None
        if _one_document(text):  # `{"data": [...]}` over several lines: its error, not each line's
            line = text.count("\n", 0, exc.offset or 0) + 1
            field = exc.field.removeprefix("data.").split(".")[0]
            errors.append(RowError(line, field, exc.message))
            return "line", []
    if isinstance(doc, dict) and isinstance(doc.get("data"), list):
        return "item", _numbered(doc["data"], errors)
    return "line", list(parse_json_lines(text, errors))


def _one_document(text):
    """Whether JSON text that `loads` refused is one document over several lines rather than
    JSON Lines: its first line opens a value and stops there (`{`, `{"data": [`), as a
    pretty-printed document's does and a line of JSON Lines' never does."""
    first = next((line for _, line in lines(text) if line.strip()), "").strip()
    return first != text.strip() and first.endswith(("{", "[", ",", ":"))


def _numbered(items, errors):
    if len(items) > IMPORT_MAX_CASES:
        raise too_many(IMPORT_MAX_CASES + 1, "item")
    out = []
    for n, obj in enumerate(items, start=1):
        if isinstance(obj, dict):
            out.append((n, obj))
        else:
            errors.append(RowError(n, "", "must be a JSON object", where="item"))
    return out


def csv_records(text, errors):
    """(row number, cells) of CSV text, the header being row 1; the delimiter is read from the
    header among comma, semicolon and tab (`delimiter_of`; spreadsheets in some locales write
    `;`). A
    record the csv module cannot read ends the reading with a RowError naming its row.

    The csv module's own cell limit (131,072 characters by default, a process-wide setting) is
    raised to the file limit, so that a long cell reaches the case's field limit
    (CASE_FIELD_MAX_BYTES, 256 KiB), which names the row and the field."""
    if csv.field_size_limit() < max_bytes():
        csv.field_size_limit(max_bytes())
    reader = csv.reader(io.StringIO(text), delimiter=delimiter_of(text))
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
        if number > IMPORT_MAX_CASES + 1:  # the header is row 1
            raise too_many(number, "row")
        yield number, values


_QUOTED = re.compile(r'"[^"]*"')


def delimiter_of(text):
    """The delimiter of CSV text: whichever of comma, semicolon and tab its header line (outside
    quoted names) holds most, comma on a tie or when it holds none. Counted in one pass, never
    with `csv.Sniffer`, whose quote regex backtracks quadratically on a long line (60 KB of
    ` 'a` took 20 s)."""
    end = text.find("\n")
    header = _QUOTED.sub("", text if end == -1 else text[:end])
    counts = {delimiter: header.count(delimiter) for delimiter in (",", ";", "\t")}
    best = max(counts, key=lambda delimiter: counts[delimiter])  # the first of a tie: ","
    return best if counts[best] else ","


def header_errors(header):
    """RowErrors of a CSV header's columns given twice (the last would silently win): the first
    ROW_MAX_ERRORS - 1, then how many more."""
    seen: set[str] = set()
    errors: list[Any] = []
    more = 0
    for name in header:
        if name in seen:
            if len(errors) < ROW_MAX_ERRORS - 1:
                errors.append(RowError(1, name, f"column {excerpt(name)} is given twice", "row"))
            else:
                more += 1
        seen.add(name)
    if more:
        errors.append(RowError(1, "", f"and {more} more column(s) given twice", "row"))
    return errors


def _readers():
    # Imported here: a cycle: the format modules import `Row` and `RowError` from this package.
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
    """Text from an uploaded file's bytes: UTF-8, with or without the BOM spreadsheets write.
    FileInvalid names the line of a byte that is not UTF-8, and of a NUL character (PostgreSQL
    stores none in text or jsonb, so it is refused here for every format)."""
    if isinstance(data, str):
        text = data.removeprefix("\ufeff")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            byte = data[exc.start : exc.start + 1].hex()
            message = f"not UTF-8 (byte 0x{byte} at offset {exc.start})"
            raise FileInvalid([RowError(line, "", message)]) from None
    nul = text.find("\x00")
    if nul != -1:
        line = text.count("\n", 0, nul) + 1
        raise FileInvalid([RowError(line, "", "a NUL character (not allowed in a case)")])
    return text


def detect_format(text, filename=None):
    """The format of a file, from its name and first record (docs/cases.md, "Formats").

    A `.csv` file (or text whose first line is not JSON) is Sherlock CSV when its header has a
    `key` column, else promptfoo. JSON is OpenAI evals when its first object has `ideal` or
    chat messages as `input`; Langfuse when it has `expectedOutput`, `datasetId` or
    `metadata`, or the document is a JSON array or `{"data": [...]}`; Sherlock JSONL when it
    has `key` or another case field. Anything else is refused: name the format."""
    suffix = PurePath(filename).suffix.lower() if filename else ""
    stripped = text.lstrip()
    looks_json = stripped[:1] in ("{", "[")
    if suffix == ".csv" or (suffix not in (".json", ".jsonl", ".ndjson") and not looks_json):
        # Imported here: a cycle: the format modules import `Row` and `RowError` from this package.
        from evaluations.cases_io.csv_format import header_of

        header = header_of(text)
        if not header:
            raise UnknownFormat("the file is empty")
        return "csv" if "key" in header else "promptfoo"
    if stripped.startswith("["):
        return "langfuse"
    errors = ErrorList()
    try:
        where, items = json_items(text, errors)
    except TooManyErrors:
        raise FileInvalid(errors.listed(stopped=True)) from None
    if where == "item":
        return "langfuse"
    if not items and errors:
        raise FileInvalid(errors)  # every line refused (too deep, a duplicate...): say where
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
    """(format, rows, errors) of a file's bytes or text (`errors` an ErrorList: past
    IMPORT_MAX_ERRORS, FileInvalid with the first ones); `fmt` None detects it. UnknownFormat
    when the format is not one of READ_FORMATS or cannot be detected, FileInvalid when the file
    cannot be read (`decode`), ActionInvalid `too_large` over the size limit (callers reading a
    file use `read_upload`, which refuses it before reading)."""
    size = len(data) if isinstance(data, bytes) else len(data.encode())
    if size > max_bytes():
        raise too_large(size)
    text = decode(data)
    if fmt is None:
        fmt = detect_format(text, filename)
    readers = _readers()
    if fmt not in readers:
        raise UnknownFormat(f"unknown format {fmt!r} (one of {', '.join(READ_FORMATS)})")
    errors = ErrorList()
    try:
        rows = readers[fmt](text, errors)
    except TooManyErrors:
        raise FileInvalid(errors.listed(stopped=True)) from None
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
    # Imported here: a cycle: the format modules import `Row` and `RowError` from this package.
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
