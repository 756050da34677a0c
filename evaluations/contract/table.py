"""The table of DESIGN section 6, one markdown row per variant, in the article's cell formats."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from evaluations.contract.decision import FAIL, GATE_LABELS, PASS, ContractResult, Ratio

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


def _money(value: Decimal | None) -> str:
    return "unavailable" if value is None else f"${value}"


def _counted(ratio: Ratio) -> str:
    # An empty denominator is shown as n/a (DESIGN 6), with the raw counts kept visible.
    return f"{ratio} (n/a)" if not ratio.den else str(ratio)


def format_cells(result: ContractResult) -> dict[str, str]:
    """The cells of one table row, keyed by ``TABLE_COLUMNS`` (e.g. "0.818 (4/4)", "$0.52")."""
    quality = "unavailable" if result.quality_mean is None else str(result.quality_mean)
    false_success = str(result.false_success)
    if result.false_success.wilson95:
        low, high = result.false_success.wilson95
        false_success += f" [{low:.3f}, {high:.3f}]"
    first = result.first_failing_gate
    return {
        "variant": result.variant,
        "quality": f"{quality} ({result.graded}/{result.declared_complete})",
        "useful progress": _counted(result.useful_progress),
        "verified tool effects": _counted(result.tool_effect_integrity),
        "cost/run": _money(result.cost_per_run_usd),
        "cost/verified outcome": _money(result.cost_per_verified_outcome_usd),
        "false success": false_success,
        "unverified completion": str(result.unverified_completions),
        "gate": PASS if first is None else f"{FAIL} ({GATE_LABELS[first]})",
    }


def render_table(results: Iterable[ContractResult]) -> str:
    """The markdown table of DESIGN section 6, one row per variant."""

    def row(cells: Iterable[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    lines = [row(TABLE_COLUMNS), "|" + "---|" * len(TABLE_COLUMNS)]
    for result in results:
        cells = format_cells(result)
        lines.append(row(cells[column] for column in TABLE_COLUMNS))
    return "\n".join(lines)
