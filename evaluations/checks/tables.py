"""Reading tables however agents and case authors write them, and comparing their cells.

Agents return tables as JSON objects, lists of records, CSV or Markdown inside prose, and case
authors paste whatever they have; the data-task checks should judge the table, not its
spelling. Everything is normalized to `Table(columns, rows)`. Accepted forms, tried in order:

* an object with a `table` key (the table is inside the output),
* `{"columns": [...], "rows": [[...] or {...}]}` (`data` is accepted for `rows`, pandas'
  "split" orient; a column may be `{"name": ...}`),
* a list of row objects (columns in first-seen order, a missing key is null),
* an object of equal-length lists, one per column (pandas' "list" orient),
* a string: JSON of any form above, else the first Markdown pipe table in it, else the first
  embedded JSON table, else CSV (delimiter sniffed among `, ; tab |`; a header and at least one
  row; at least two columns, so that plain prose never reads as a one-column table).

Cells read from text are typed as a reader would: empty, `null`, `none` and `nan` are null,
`true`/`false` booleans, integers (also with `1,234` separators) and decimals numbers, anything
else a stripped string. Cells from JSON keep their JSON types.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from .base import embedded_json_values, maximum_matching


class TableError(ValueError):
    """A value that cannot be read as a table; the message says what was wrong with it."""


@dataclass
class Table:
    """Column names and rows of equal length (after normalization)."""

    columns: list[str]
    rows: list[list]

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.rows), len(self.columns))


def parse(value) -> Table:
    if isinstance(value, Table):
        return value
    if isinstance(value, str):
        return _from_text(value)
    if isinstance(value, dict):
        if "table" in value:
            return parse(value["table"])
        if "columns" in value:
            return _from_columns(value)
        if value and all(isinstance(v, list) for v in value.values()):
            lengths = {len(v) for v in value.values()}
            if len(lengths) > 1:
                raise TableError("column lists have different lengths")
            return Table(
                [str(k) for k in value], [list(r) for r in zip(*value.values(), strict=True)]
            )
        raise TableError("an object needs columns and rows, a table key, or one list per column")
    if isinstance(value, list):
        if not all(isinstance(r, dict) for r in value):
            raise TableError("a list must hold one object per row (a list of lists has no header)")
        columns: dict[str, None] = {}
        for row in value:
            columns.update(dict.fromkeys(str(k) for k in row))
        names = list(columns)
        return Table(names, [[_get(row, name) for name in names] for row in value])
    raise TableError(f"cannot read a table from {type(value).__name__}")


def _get(row: dict, name: str):
    return row[name] if name in row else next((v for k, v in row.items() if str(k) == name), None)


def _from_columns(value: dict) -> Table:
    columns = value["columns"]
    if not isinstance(columns, list) or not columns:
        raise TableError("columns must be a non-empty list")
    names = [str(c["name"]) if isinstance(c, dict) and "name" in c else str(c) for c in columns]
    rows = value.get("rows", value.get("data", []))
    if not isinstance(rows, list):
        raise TableError("rows must be a list")
    normalized = []
    for i, row in enumerate(rows):
        if isinstance(row, dict):
            normalized.append([_get(row, n) for n in names])
        elif isinstance(row, list) and len(row) == len(names):
            normalized.append(list(row))
        else:
            raise TableError(f"row {i} does not have {len(names)} cells")
    return Table(names, normalized)


_MD_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _from_text(text: str) -> Table:
    text = text.strip()
    if not text:
        raise TableError("the text is empty")
    if text[0] in "{[":
        try:
            value = json.loads(text)
        except ValueError:
            pass  # JSON-looking but not JSON: maybe Markdown or CSV after all
        else:
            return parse(value)
    table = _from_markdown(text)
    if table:
        return table
    for value in embedded_json_values(text):
        try:
            return parse(value)
        except TableError:
            continue
    return _from_csv(text)


def _split_markdown_row(line: str) -> list[str]:
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") else line
    return [cell.strip() for cell in line.split("|")]


def _from_markdown(text: str) -> Table | None:
    lines = text.splitlines()
    for i in range(len(lines) - 1):
        if "|" in lines[i] and _MD_SEPARATOR.match(lines[i + 1]):
            header = _split_markdown_row(lines[i])
            rows = []
            for line in lines[i + 2 :]:
                if "|" not in line:
                    break
                cells = [coerce_text_cell(c) for c in _split_markdown_row(line)]
                # GitHub's rule: extra cells are dropped, missing cells are empty.
                rows.append((cells + [None] * len(header))[: len(header)])
            return Table(header, rows)
    return None


def _from_csv(text: str) -> Table:
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        raise TableError("not JSON, a Markdown table or CSV") from None
    records = [r for r in csv.reader(io.StringIO(text), dialect) if any(c.strip() for c in r)]
    if len(records) < 2 or len(records[0]) < 2:
        raise TableError("CSV needs a header, at least one row and at least two columns")
    header = [c.strip() for c in records[0]]
    for i, record in enumerate(records[1:], start=1):
        if len(record) != len(header):
            raise TableError(
                f"CSV line {i + 1} has {len(record)} fields, the header has {len(header)}"
            )
    return Table(header, [[coerce_text_cell(c) for c in r] for r in records[1:]])


_INT = re.compile(r"[-+]?(\d+|\d{1,3}(,\d{3})+)")
_FLOAT = re.compile(r"[-+]?(\d+|\d{1,3}(,\d{3})+)?\.\d+([eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+")
_NULLS = {"", "null", "none", "nan"}


def coerce_text_cell(cell: str):
    s = cell.strip()
    low = s.lower()
    if low in _NULLS:
        return None
    if low in ("true", "false"):
        return low == "true"
    if _INT.fullmatch(s):
        return int(s.replace(",", ""))
    if _FLOAT.fullmatch(s):
        return float(s.replace(",", ""))
    return s


# --- columns and types ---------------------------------------------------------------------------


def column_key(name, case_sensitive: bool) -> str:
    name = str(name).strip()
    return name if case_sensitive else name.casefold()


def column_index(table: Table, case_sensitive: bool) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, name in enumerate(table.columns):
        index.setdefault(column_key(name, case_sensitive), i)  # a duplicate name: first wins
    return index


def is_null(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")

# Type families, so that pandas dtype names, JSON Schema names and plain words all work
# (evaluators.md §5.3: integer, float, bool, datetime, string/object, category).
FAMILY_ALIASES = {
    "integer": (
        "integer",
        "int",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "long",
    ),
    "float": ("float", "float16", "float32", "float64", "double", "decimal", "real"),
    "number": ("number", "numeric"),
    "boolean": ("boolean", "bool"),
    "datetime": (
        "datetime",
        "date",
        "timestamp",
        "time",
        "datetime64",
        "datetime64[ns]",
        "temporal",
    ),
    "string": ("string", "str", "object", "text", "category", "categorical", "nominal"),
}
FAMILY_OF = {alias: family for family, aliases in FAMILY_ALIASES.items() for alias in aliases}


def infer_family(values: list) -> str:
    """The type family of a column's non-null values; "empty" when all are null."""
    values = [v for v in values if not is_null(v)]
    if not values:
        return "empty"
    if all(isinstance(v, bool) for v in values):
        return "boolean"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "integer"
    if all(is_number(v) for v in values):
        return "float"
    if all(isinstance(v, str) and _DATETIME.fullmatch(v.strip()) for v in values):
        return "datetime"
    return "string"


def families_match(actual: str, wanted: str, numeric_equiv: bool) -> bool:
    if actual == "empty":
        return True  # an all-null column carries no type to contradict the expected one
    if wanted == "number" or (numeric_equiv and wanted in ("integer", "float")):
        return actual in ("integer", "float")
    return actual == wanted


# --- values --------------------------------------------------------------------------------------


def as_number(value) -> float | None:
    if is_number(value):
        return float(value)
    if isinstance(value, str):
        coerced = coerce_text_cell(value)
        if is_number(coerced):
            return float(coerced)
    return None


def cells_equal(actual, wanted, abs_tol: float, rel_tol: float) -> bool:
    """pandas/datacompy rule for numbers, |a - b| <= abs_tol + rel_tol * |b| (evaluators.md
    §5.4); null equals null; a number written as text equals the number; strings compare
    stripped and case-sensitively; booleans only equal booleans."""
    if is_null(actual) or is_null(wanted):
        return is_null(actual) and is_null(wanted)
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return type(actual) is type(wanted) and actual == wanted
    a, b = as_number(actual), as_number(wanted)
    if a is not None and b is not None:
        return abs(a - b) <= abs_tol + rel_tol * abs(b)
    if isinstance(actual, str) and isinstance(wanted, str):
        return actual.strip() == wanted.strip()
    return actual == wanted


def _exact_key(row: list) -> tuple:
    key: list[tuple[Any, ...]] = []
    for cell in row:
        number = None if isinstance(cell, bool) else as_number(cell)
        if is_null(cell):
            key.append(("null",))
        elif number is not None:
            key.append(("number", number))
        elif isinstance(cell, str):
            key.append(("string", cell.strip()))
        else:
            key.append(("json", json.dumps(cell, sort_keys=True, default=str)))
    return tuple(key)


def match_rows(actual: list, wanted: list, rows_equal, order_matters: bool) -> list:
    """Pairs (wanted index, actual index) of matching rows.

    Ordered: row i against row i. Unordered: a bag (multiset) match as Spider does, so a
    duplicated expected row needs a duplicated actual row. To stay fast on tables of thousands
    of rows, identical rows are paired through a hash first, and the rest are matched only
    within groups that agree on every non-numeric cell (only numbers have a tolerance). A row
    identical to one row and within tolerance of another could in theory be paired less well
    than optimal; tolerance-sized differences do not cause that in practice.
    """
    if order_matters:
        return [
            (i, i) for i in range(min(len(actual), len(wanted))) if rows_equal(actual[i], wanted[i])
        ]
    by_key: dict[tuple, list[int]] = defaultdict(list)
    for i, row in enumerate(actual):
        by_key[_exact_key(row)].append(i)
    pairs, rest = [], defaultdict(list)
    for j, row in enumerate(wanted):
        key = _exact_key(row)
        if by_key.get(key):
            pairs.append((j, by_key[key].pop(0)))
        else:
            rest[_loose_key(key)].append(j)
    free = defaultdict(list)
    for key, bucket in by_key.items():
        free[_loose_key(key)].extend(bucket)
    for key, rest_wanted in rest.items():
        rest_actual = free.get(key, [])
        extra = maximum_matching(
            [wanted[j] for j in rest_wanted],
            [actual[i] for i in rest_actual],
            lambda w, a: rows_equal(a, w),
        )
        pairs += [(rest_wanted[x], rest_actual[y]) for x, y in extra]
    return sorted(pairs)


def _loose_key(key: tuple) -> tuple:
    return tuple(("number",) if part[0] == "number" else part for part in key)
