"""The contract table (docs/contract.md), one markdown row per variant, in the article's cell
formats.

The quality cell is the mean score with two counts: the trials the quality grader ran on
(``graded``, the mean's denominator) and the declared completions. The contract's worked example
grades only declared completions, so its "0.818 (4/4)" reads as graded out of the completions;
Sherlock's grader also scores the trials that did not declare completion, so a run may read
"0.321 (5/4)", which looks like five out of four. The markdown table and the API's ``table``
keep the article's "(graded/declared)" (the contract prints exactly that table); the
pages ask ``format_cells(result, explained=True)``, which names both counts:
"0.321 (5 trials graded, 4 declared complete)".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from evaluations.contract.measures import FAIL, GATE_LABELS, PASS, ContractResult, Ratio
from sherlock.core.money import usd

TABLE_COLUMNS = (
    "variant",
    "quality",
    "useful progress",
    "verified tool effects",
    "cost/run",
    "cost/verified outcome",
    "false success",
    "unverified completion",
    "gate",
)

# The pages' names for the columns whose article names hide a unit: the article's "cost/run" is
# the cost of one of its runs, which Sherlock calls a trial, and a run page that read
# "cost/run $0.01" under a run that cost $4.85 said something false.
PAGE_COLUMN_LABELS = {
    "cost/run": "cost per trial",
    "cost/verified outcome": "cost per verified outcome",
}


def page_columns() -> list[str]:
    """``TABLE_COLUMNS`` as the pages head them: every figure says its unit."""
    return [PAGE_COLUMN_LABELS.get(column, column) for column in TABLE_COLUMNS]


def _money(value: Decimal | None, unit: str = "") -> str:
    if value is None:
        return "unavailable"
    return usd(value) + (f" {unit}" if unit else "")


def _counted(ratio: Ratio) -> str:
    # An empty denominator is shown as n/a, with the raw counts kept visible.
    return f"{ratio} (n/a)" if not ratio.den else str(ratio)


def quality_cell(result: ContractResult, *, explained: bool = False) -> str:
    """The quality cell: "0.818 (4/4)" (graded/declared complete, the article's format), or,
    ``explained``, "0.818 (4 trials graded, 4 declared complete)"."""
    quality = "unavailable" if result.quality_mean is None else str(result.quality_mean)
    if not explained:
        return f"{quality} ({result.graded}/{result.declared_complete})"
    graded = f"{result.graded} trial{'' if result.graded == 1 else 's'} graded"
    return f"{quality} ({graded}, {result.declared_complete} declared complete)"


def gate_cell(result: ContractResult, verdict: Any = None) -> str:
    """The "gate" cell. Of a trial file (``manage.py contract``, no policy): the contract's,
    "pass" or "fail (<first failing gate>)", as the contract table prints it.
    Of a run, with its ``verdict`` (``evaluations.verdict.Verdict``): the verdict's, because a
    contract that passes says nothing about the trials in error, the results no check could
    score or a run that did not complete; so "pass" only when the verdict passed,
    "incomplete (<gate>)" when evidence is missing (unavailable is never a pass, nor
    a failure), "insufficient evidence (<gate>)" when an interval leaves a gate undecided,
    "fail (<gate>)", or "pending"."""
    if verdict is None:
        first = result.first_failing_gate
        return PASS if first is None else f"{FAIL} ({GATE_LABELS[first]})"
    if verdict.outcome == "passed":
        return PASS
    if verdict.outcome == "pending":
        return "pending"
    if verdict.outcome == "insufficient":  # a gate decided on an interval, undecided
        label = next((g.label for g in verdict.gates if g.state == "insufficient"), "")
        return f"insufficient evidence ({label})" if label else "insufficient evidence"
    if verdict.outcome == "incomplete":
        # Name what is missing: the unscored evidence when that gate fails, else the first
        # failing gate (coverage, for a run that did not complete).
        evidence = verdict.gate("checks_scored")
        label = evidence.label if evidence and evidence.state == FAIL else ""
        label = label or verdict.first_failing_label
        return f"incomplete ({label})" if label else "incomplete"
    label = verdict.first_failing_label
    return f"{FAIL} ({label})" if label else FAIL


def format_cells(
    result: ContractResult, *, explained: bool = False, verdict: Any = None
) -> dict[str, str]:
    """The cells of one table row, keyed by ``TABLE_COLUMNS`` (e.g. "0.818 (4/4)", "$0.52");
    ``explained``, for the pages: the quality cell names its counts (`quality_cell`) and each
    cost its unit ("$0.01 per trial", "$0.05 per verified outcome"). The gate cell is the
    run's ``verdict`` when one is given (`gate_cell`)."""
    false_success = str(result.false_success)
    if result.false_success.wilson95:
        low, high = result.false_success.wilson95
        false_success += f" [{low:.3f}, {high:.3f}]"
    return {
        "variant": result.variant,
        "quality": quality_cell(result, explained=explained),
        "useful progress": _counted(result.useful_progress),
        "verified tool effects": _counted(result.tool_effect_integrity),
        "cost/run": _money(result.cost_per_run_usd, "per trial" if explained else ""),
        "cost/verified outcome": _money(
            result.cost_per_verified_outcome_usd, "per verified outcome" if explained else ""
        ),
        "false success": false_success,
        "unverified completion": str(result.unverified_completions),
        "gate": gate_cell(result, verdict),
    }


def render_table(
    results: Iterable[ContractResult], verdicts: Sequence[Any] = (), *, units: bool = False
) -> str:
    """The markdown contract table (docs/contract.md), one row per variant; ``verdicts``, one per
    result when they are runs', make each gate cell the run's verdict (`gate_cell`). ``units``
    heads the columns as the pages do ("cost per trial", not the article's "cost/run")."""

    def row(cells: Iterable[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    heads = page_columns() if units else list(TABLE_COLUMNS)
    lines = [row(heads), "|" + "---|" * len(TABLE_COLUMNS)]
    for index, result in enumerate(results):
        cells = format_cells(result, verdict=verdicts[index] if verdicts else None)
        lines.append(row(cells[column] for column in TABLE_COLUMNS))
    return "\n".join(lines)
