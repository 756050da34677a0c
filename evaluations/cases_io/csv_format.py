"""Sherlock's case CSV: one case a row, under a header of these columns (any order; only
`key` is required, and a column left out leaves that field of an existing case as it is):

| column | holds |
|---|---|
| `key` | the case's stable id (a slug) |
| `input` | the input as plain text |
| `input_json` | the input as JSON, for an input that is not text (use one of the two) |
| `expected_output` | `expected.output` as plain text |
| `expected` | the rest of `expected` as a JSON object (`table`, `chart`, `trajectory`) |
| `contexts` | reference contexts, one per line of the cell (blank lines skipped), or a JSON list |
| `expected_tools` | tool names separated by commas, or a JSON list of `{"name", "arguments"}` |
| `tags` | tags separated by commas, or a JSON list of strings |
| `outcome_check` | the outcome verifier as a JSON object |
| `overrides` | per-check overrides as a JSON object |

An empty cell is the field's empty value. The writer uses the plain forms when they read back
to the same value and JSON otherwise, so a file it writes imports as the same cases. A cell a
spreadsheet would run as a formula is written with a quote ahead and read back exact
(`sherlock.core.csv_cells`, for every CSV Sherlock writes; docs/cases.md).
"""

import io
import json

from evaluations.cases_io import JSONRefused, Row, RowError, csv_records, header_errors, loads
from sherlock.core.csv_cells import SafeDictWriter, restore_cell

COLUMNS = (
    "key",
    "input",
    "input_json",
    "expected_output",
    "expected",
    "contexts",
    "expected_tools",
    "tags",
    "outcome_check",
    "overrides",
)


def header_of(text):
    for _, record in csv_records(text, []):
        return [name.strip() for name in record]
    return []


class CellError(ValueError):
    pass


def _json(cell, kind, name):
    try:
        value = loads(cell)
    except JSONRefused as exc:
        raise CellError(f"{name}: {exc.message}") from None
    if kind is not None and not isinstance(value, kind):
        raise CellError(f"{name}: must be a JSON {kind.__name__}")
    return value


def _list(cell, name, separator):
    """A JSON list when the cell starts with `[`, else the cell cut at `separator`. A list of
    names (tags, tools) that starts with `{` is JSON too, refused as not a list: a tool named
    `{"name": "kb.search"}` is a mistake, never meant."""
    start = ("[",) if separator == "\n" else ("[", "{")
    if cell.lstrip().startswith(start):
        return _json(cell, list, name)
    if separator == "\n":
        return [line.removesuffix("\r") for line in cell.split("\n") if line.strip()]
    return [part.strip() for part in cell.split(separator) if part.strip()]


def _tools(cell):
    if cell.lstrip().startswith(("[", "{")):
        return _json(cell, list, "expected_tools")
    return [{"name": name} for name in _list(cell, "expected_tools", ",")]


def cell_fields(record):
    """The content fields of one CSV record (a dict of the columns present), and the errors of
    its cells (CellError each): a cell that cannot be read leaves its field out, and the others
    are read all the same, so every bad cell of a row is named at once."""
    fields, problems = {}, []

    def read_cell(name, reader):
        try:
            fields[name] = reader()
        except CellError as exc:
            problems.append(exc)

    both = "input" in record and "input_json" in record
    if both and record["input"] and record["input_json"]:
        problems.append(CellError("input: give input or input_json, not both"))
    elif "input_json" in record and record["input_json"]:
        read_cell("input", lambda: _json(record["input_json"], None, "input_json"))
    elif "input" in record or "input_json" in record:
        fields["input"] = record.get("input") or ""
    if "expected" in record or "expected_output" in record:
        read_cell("expected", lambda: _expected(record))
    if "contexts" in record:
        read_cell("contexts", lambda: _list(record["contexts"], "contexts", "\n"))
    if "expected_tools" in record:
        read_cell("expected_tools", lambda: _tools(record["expected_tools"]))
    if "tags" in record:
        read_cell("tags", lambda: _list(record["tags"], "tags", ","))
    for name in ("outcome_check", "overrides"):
        if name in record:
            read_cell(
                name, lambda name=name: _json(record[name], dict, name) if record[name] else {}
            )
    return fields, problems


def _expected(record):
    expected = _json(record["expected"], dict, "expected") if record.get("expected") else {}
    if record.get("expected_output"):
        if "output" in expected:
            raise CellError("expected_output: also given in the expected column")
        expected["output"] = record["expected_output"]
    return expected


def read(text, errors):
    records = csv_records(text, errors)
    _, header = next(records, (1, None))
    if not header:
        errors.append(RowError(1, "", "the file is empty (a header row is needed)", "row"))
        return []
    header = [name.strip() for name in header]
    unknown = [name for name in header if name not in COLUMNS]
    twice = header_errors(header)
    if unknown:
        errors.append(RowError(1, unknown[0], f"unknown column {unknown[0]!r}", "row"))
    if "key" not in header:
        errors.append(RowError(1, "key", "a key column is needed", "row"))
    errors += twice
    if unknown or twice or "key" not in header:
        return []
    rows = []
    for n, values in records:
        if not any(value.strip() for value in values):
            continue  # a blank row, as spreadsheets leave at the end
        if len(values) != len(header):
            errors.append(RowError(n, "", f"{len(values)} cells for {len(header)} columns", "row"))
            continue
        record = dict(zip(header, map(restore_cell, values), strict=True))
        fields, problems = cell_fields(record)
        errors += [RowError(n, str(exc).split(":", 1)[0], str(exc), "row") for exc in problems]
        rows.append(Row(n, record["key"].strip(), fields, "row", faulty=bool(problems)))
    return rows


def _plain_list(values, separator):
    """The list as `separator`-joined text when it reads back the same, else None."""
    if not all(isinstance(v, str) for v in values) or not values:
        return None
    if separator == "\n":
        if any("\n" in v or "\r" in v or not v.strip() for v in values) or (
            values[0].lstrip().startswith("[")
        ):
            return None
    elif any(separator in v or v != v.strip() or not v for v in values) or (
        values[0].startswith(("[", "{"))
    ):
        return None
    return separator.join(values) if separator == "\n" else ", ".join(values)


def _dump(value):
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


def to_record(case):
    record = {"key": case["key"]}
    value = case.get("input", "")
    if isinstance(value, str):
        record["input"], record["input_json"] = value, ""
    else:
        record["input"], record["input_json"] = "", _dump(value)
    expected = dict(case.get("expected") or {})
    output = expected.get("output")
    if isinstance(output, str) and output:
        record["expected_output"] = expected.pop("output")
    else:
        record["expected_output"] = ""
    record["expected"] = _dump(expected) if expected else ""
    contexts = case.get("contexts") or []
    record["contexts"] = (_plain_list(contexts, "\n") or _dump(contexts)) if contexts else ""
    tools = case.get("expected_tools") or []
    names = [t.get("name") for t in tools if isinstance(t, dict) and set(t) == {"name"}]
    plain = _plain_list(names, ",") if len(names) == len(tools) else None
    record["expected_tools"] = (plain or _dump(tools)) if tools else ""
    tags = case.get("tags") or []
    record["tags"] = (_plain_list(tags, ",") or _dump(tags)) if tags else ""
    for name in ("outcome_check", "overrides"):
        record[name] = _dump(case[name]) if case.get(name) else ""
    return record


def write(cases):
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=COLUMNS)
    writer.writeheader()
    for case in cases:
        writer.writerow(to_record(case))
    return buffer.getvalue()
