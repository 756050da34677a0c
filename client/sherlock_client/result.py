"""A finished run as the client reports it: the server's verdict (the outcome and exit code come
from `GET /runs/{id}/verdict/`, never from the client), the cases with their repetitions, what
the client did, and the comparison with the live version, in the four outputs: the terminal,
JUnit XML, JSON and a pull request's markdown comment."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, TextIO
from urllib.parse import urlsplit

from sherlock_client.runner import Stats

# The exit codes a CI can trust (docs/client-cli.md): the verdict's, 3 for the rest.
EXIT_PASSED, EXIT_FAILED, EXIT_INCOMPLETE, EXIT_ERROR = 0, 1, 2, 3
# "insufficient" (insufficient evidence: a gate decided on its interval, which straddles its
# threshold) exits 2 as incomplete does: no decision, and more cases would make one.
OUTCOME_EXIT = {
    "passed": EXIT_PASSED,
    "failed": EXIT_FAILED,
    "incomplete": EXIT_INCOMPLETE,
    "insufficient": EXIT_INCOMPLETE,
}
OUTCOME_WORDS = {"insufficient": "insufficient evidence"}


@dataclass
class Result:
    """One run's result. `exit_code` is the verdict's (a pending verdict is incomplete: 2)."""

    run: dict[str, Any]
    verdict: dict[str, Any]
    agent: str = ""
    version: str = ""
    dataset: str = ""
    cases: list[dict[str, Any]] = field(default_factory=list)
    stats: Stats | None = None
    baseline: dict[str, Any] | None = None  # the comparison with the live version's latest run
    notes: list[str] = field(default_factory=list)
    junit: str | None = None  # the server's JUnit XML of the run (`GET /runs/{id}/junit/`)

    @property
    def outcome(self) -> str:
        return str(self.verdict.get("outcome") or "pending")

    @property
    def exit_code(self) -> int:
        code = self.verdict.get("exit_code")
        if code in (EXIT_PASSED, EXIT_FAILED, EXIT_INCOMPLETE):
            return int(code)
        return OUTCOME_EXIT.get(self.outcome, EXIT_INCOMPLETE)

    @property
    def words(self) -> str:
        """The outcome as a person reads it ("insufficient evidence")."""
        return OUTCOME_WORDS.get(self.outcome, self.outcome)

    @property
    def url(self) -> str:
        return str(self.verdict.get("url") or self.run.get("url") or "")

    @property
    def passed(self) -> bool:
        return self.exit_code == EXIT_PASSED

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run.get("id"),
            "url": self.url,
            "agent": self.agent,
            "version": self.version,
            "dataset": self.dataset,
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "verdict": self.verdict,
            "cases": self.cases,
            "client": self.stats.as_dict() if self.stats else None,
            "baseline": _baseline_brief(self.baseline),
            "notes": self.notes,
        }


def _baseline_brief(comparison: dict[str, Any] | None) -> dict[str, Any] | None:
    if not comparison:
        return None
    return {
        "run": comparison.get("a", {}).get("run"),
        "cases": comparison.get("cases"),
        "comparable": comparison.get("comparable"),
        "differences": comparison.get("differences"),
    }


def case_rows(
    trials: list[dict[str, Any]], case_results: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One row per case: its repetitions' statuses and errors from the trials, and whether it
    passed (and is flaky) as the server judged it (`/case-results/`; None before it has)."""
    by_case: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for trial in trials:
        by_case[str(trial.get("case"))].append(trial)
    said: dict[str, Any] = {str(r.get("case")): r for r in case_results}
    rows = []
    for case in sorted(by_case):
        repetitions = sorted(by_case[case], key=lambda t: t.get("repetition") or 0)
        errors = [t.get("error") for t in repetitions if t.get("status") == "error"]
        judged = said.get(case, {})
        rows.append(
            {
                "case": case,
                "repetitions": [
                    {
                        "repetition": t.get("repetition"),
                        "status": t.get("status"),
                        "error": t.get("error") or None,
                        "latency_ms": t.get("latency_ms"),
                    }
                    for t in repetitions
                ],
                "errored": len(errors),
                "error": next((e for e in errors if e), None),
                # The server's state of the case (`passed`, `failed`, `flaky`, `unscored`);
                # None from a server before case states, or before it has judged.
                "status": judged.get("status"),
                "reason": judged.get("reason") or "",
                "passed": judged.get("passed"),
                "flaky": judged.get("flaky"),
                "checks": judged.get("checks") or {},
            }
        )
    return rows


def _state(row: dict[str, Any]) -> str:
    """The case's state in words: the server's, with the reason of an unscored case; from a
    server before case states, an errored case is an error and never a pass."""
    status = row.get("status")
    if status == "unscored":
        return f"unscored ({row['reason']})" if row.get("reason") else "unscored"
    if status:
        return str(status)
    if row["errored"]:
        return "error"
    if row["passed"] is True:
        return "flaky" if row.get("flaky") else "passed"
    if row["passed"] is False:
        return "failed"
    return "done"


# --- the terminal ------------------------------------------------------------------------------


def print_result(result: Result, stream: TextIO, *, rich: bool) -> None:  # noqa: C901
    """The case table and the contract: rich tables on a terminal, plain lines otherwise."""
    verdict = result.verdict
    counts = verdict.get("cases") or {}
    head = (
        f"{result.words.upper()}: run {result.run.get('id')} of {result.agent} "
        f"{result.version} on {result.dataset}"
    )
    reasons = reason_lines(result)
    if rich:
        from rich.console import Console
        from rich.table import Table

        console = Console(file=stream)
        cases = Table(title="cases")
        for name in ("case", "result", "repetitions", "error"):
            cases.add_column(name)
        for row in result.cases:
            cases.add_row(
                row["case"],
                _state(row),
                " ".join(str(r["status"]) for r in row["repetitions"]),
                (row["error"] or "")[:80],
            )
        console.print(cases)
        gates = Table(title="contract")
        for name in ("gate", "state", "detail"):
            gates.add_column(name)
        for gate in verdict.get("gates") or []:
            # The server's sentence for what the gate read against its bound (the raw
            # numbers are in --json).
            gates.add_row(_gate_name(gate), str(gate.get("state")), str(gate.get("detail")))
        console.print(gates)
        colour = {"passed": "green", "failed": "red"}.get(result.outcome, "yellow")
        console.print(f"[bold {colour}]{head}[/]")
        for reason in reasons:
            console.print(f"  {reason}")
        for missing in verdict.get("missing") or []:
            console.print(f"  missing: {missing.get('detail')} ({missing.get('fix') or ''})")
        if failed_cases(result):
            console.print(f"  failed cases: {named_cases(failed_cases(result)).replace('`', '')}")
        console.print(f"cases: {_counts(counts)}  {result.url}")
        return
    for row in result.cases:
        statuses = ",".join(str(r["status"]) for r in row["repetitions"])
        error = f" {row['error'][:120]}" if row["error"] else ""
        print(f"case {row['case']}: {_state(row)} [{statuses}]{error}", file=stream)
    for gate in verdict.get("gates") or []:
        print(f"gate {_gate_name(gate)}: {gate.get('state')}: {gate.get('detail')}", file=stream)
    print(head, file=stream)
    for reason in reasons:
        print(f"  {reason}", file=stream)
    for missing in verdict.get("missing") or []:
        print(f"  missing: {missing.get('detail')} ({missing.get('fix') or ''})", file=stream)
    if failed_cases(result):
        named = named_cases(failed_cases(result)).replace("`", "")
        print(f"  failed cases: {named}", file=stream)
    print(f"cases: {_counts(counts)}", file=stream)
    print(f"run: {result.url}", file=stream)


def reason_lines(result: Result) -> list[str]:
    """The verdict's reasons, each followed by what fixes it and where the docs explain it
    (the server's words: `reasons[].fix`, `reasons[].docs`; an older server has neither)."""
    lines = []
    for reason in result.verdict.get("reasons") or []:
        lines.append(str(reason.get("detail") or reason.get("code")))
        if reason.get("fix"):
            docs = _absolute(result, reason.get("docs") or "")
            lines.append(f"  to fix: {reason['fix']}" + (f" (docs: {docs})" if docs else ""))
    return lines


def _absolute(result: Result, path: str) -> str:
    """A docs path the server gave, as a link from the run's URL (its scheme and host)."""
    if not path or not path.startswith("/"):
        return path
    parts = urlsplit(result.url)
    return f"{parts.scheme}://{parts.netloc}{path}" if parts.netloc else path


def _counts(counts: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in counts.items() if not isinstance(v, list | dict))


# --- files -------------------------------------------------------------------------------------


def junit_xml(result: Result) -> str:
    """The run's JUnit XML as the server wrote it (`GET /runs/{id}/junit/`: one testcase per
    case and a `verdict` testcase that fails unless the verdict passed). From a server without
    it, a report of the verdict alone, still failing unless the verdict passed."""
    if result.junit is not None:
        return result.junit
    suite = ET.Element(
        "testsuite",
        name=_xml_safe(f"sherlock {result.agent} {result.version} on {result.dataset}"),
        tests="1",
        failures="0" if result.passed else "1",
        errors="0",
    )
    verdict_case = ET.SubElement(suite, "testcase", classname="sherlock", name="verdict")
    if not result.passed:
        reasons = "; ".join(
            str(r.get("detail") or r.get("code")) for r in result.verdict.get("reasons") or []
        )
        node = ET.SubElement(
            verdict_case,
            "failure",
            message=_xml_safe(f"{result.words}: {reasons}"[:1000]),
            type=result.outcome,
        )
        node.text = _xml_safe(result.url)
    out = ET.SubElement(verdict_case, "system-out")
    out.text = _xml_safe("\n".join([result.url, *result.notes]))
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode")


# What XML 1.0 forbids (C0 controls but tab and newlines, lone surrogates, U+FFFE, U+FFFF).
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    return _XML_FORBIDDEN.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def json_text(result: Result) -> str:
    return json.dumps(result.as_dict(), indent=2, sort_keys=True, default=str)


def markdown(result: Result) -> str:  # noqa: C901
    """A pull request comment: the outcome and the link, the contract's gates, the table
    against the live version's latest run on the same dataset and the cases that regressed."""
    mark = {"passed": "✅", "failed": "❌"}.get(result.outcome, "⚠️")
    lines = [
        f"### {mark} Sherlock: {result.words.upper()}",
        "",
        f"`{result.agent}` version `{result.version}` on `{result.dataset}`: "
        f"[run {result.run.get('id')}]({result.url})",
        "",
    ]
    for reason in result.verdict.get("reasons") or []:
        lines.append(f"- {reason.get('detail') or reason.get('code')}")
        if reason.get("fix"):
            docs = _absolute(result, reason.get("docs") or "")
            lines.append(f"  - to fix: {reason['fix']}" + (f" ([docs]({docs}))" if docs else ""))
    counts = result.verdict.get("cases") or {}
    if counts:
        lines += ["", f"Cases: {_counts(counts)}"]
    gates = result.verdict.get("gates") or []
    if gates:
        lines += ["", "| gate | state | value | bound |", "|---|---|---|---|"]
        for gate in gates:
            lines.append(
                f"| {_gate_name(gate)} | {gate.get('state')} | {_cell(gate.get('value'))} "
                f"| {_cell(gate.get('bound'))} |"
            )
    comparison = result.baseline
    if comparison:
        baseline_run = comparison.get("a", {}).get("run", {})
        lines += [
            "",
            f"Against the live version {baseline_run.get('agent_version')}'s latest run "
            f"{baseline_run.get('id')} on the same dataset:",
            "",
            comparison.get("markdown", "").strip(),
        ]
        if not comparison.get("comparable", True):
            lines += ["", "Not comparable: " + "; ".join(comparison.get("differences") or [])]
        regressed = (comparison.get("cases") or {}).get("regressed") or []
        if regressed:
            shown = ", ".join(f"`{c}`" for c in regressed[:50])
            more = f" and {len(regressed) - 50} more" if len(regressed) > 50 else ""
            lines += ["", f"**Regressed ({len(regressed)})**: {shown}{more}"]
        else:
            lines += ["", "No case regressed."]
    else:
        lines += ["", "No live version's run on this dataset to compare with."]
    failed = failed_cases(result)
    if failed:
        lines += ["", f"**Failed ({len(failed)} cases)**: {named_cases(failed)}"]
    errored = [row for row in result.cases if row["errored"]]
    if errored:
        lines += ["", f"**Agent errors ({len(errored)} cases)**:"]
        for row in errored[:20]:
            lines.append(f"- `{row['case']}`: {(row['error'] or '')[:120]}")
        if len(errored) > 20:
            lines.append(f"- and {len(errored) - 20} more")
    unscored = [row for row in result.cases if row.get("status") == "unscored"]
    if unscored:
        lines += ["", f"**No verdict ({len(unscored)} cases, never counted as passed)**:"]
        for row in unscored[:20]:
            lines.append(f"- `{row['case']}`: {row.get('reason') or 'unscored'}")
        if len(unscored) > 20:
            lines.append(f"- and {len(unscored) - 20} more")
    return "\n".join(lines).rstrip() + "\n"


def _gate_name(gate: dict[str, Any]) -> str:
    """A gate in the server's words ("blocking checks scored"); its name from an older server."""
    return str(gate.get("label") or gate.get("name"))


def _cell(value: Any) -> str:
    return text_of(value).replace("|", "\\|")


# --- one rule for numbers and money -----------------------------------------------------------

CENT = Decimal("0.01")
TEN_THOUSANDTH = Decimal("0.0001")


def usd(amount: Any) -> str:
    """Money as the server's pages show it: a dollar or more to the cent, thousands grouped
    ("$1,234.50"); under a dollar to four decimals with the zeros after the cent dropped
    ("$0.52", "$0.0002"); a non-zero amount under $0.0001 is "<$0.0001", never "$0.00"."""
    value = Decimal(str(amount))
    size = abs(value)
    if size >= 1:
        text = f"{size.quantize(CENT, ROUND_HALF_UP):,}"
    elif size and size.quantize(TEN_THOUSANDTH, ROUND_HALF_UP) == 0:
        return "<$0.0001" if value > 0 else "-<$0.0001"
    else:
        small = size.quantize(TEN_THOUSANDTH, ROUND_HALF_UP)
        text = f"{small.quantize(CENT) if small == small.quantize(CENT) else small.normalize()}"
    return f"-${text}" if value < 0 else f"${text}"


def number(value: Any) -> str:
    """A count grouped by thousands ("1,500"); a ratio or measure to four significant digits,
    so float noise never shows (0.00799999999999999 is "0.008")."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    figure = float(value)
    if figure.is_integer() and abs(figure) < 1e15:
        return f"{int(figure):,}"
    return f"{figure:.4g}"


def _numeric(text: str) -> bool:
    try:
        Decimal(text)
    except (InvalidOperation, ValueError):
        return False
    return text.strip().lower() not in ("nan", "inf", "-inf", "infinity", "-infinity")


def text_of(value: Any, name: str = "") -> str:
    """A value of the verdict (a gate's `value` or `bound`) as a reviewer reads it: money by
    `usd` (a name ending in `_usd`), numbers by `number`, `None` as "n/a", yes/no for
    booleans, a count over a total as "9/10", and a dict as a short sentence of its parts
    ("unverified completions 3, declared complete 10"); never a Python repr."""
    if value is None:
        return "n/a"
    if isinstance(value, dict):
        if "num" in value and "den" in value:
            head = f"{number(value['num'])}/{number(value['den'])}"
            rest = {k: v for k, v in value.items() if k not in ("num", "den", "wilson95")}
            return f"{head}, {text_of(rest)}" if any(v is not None for v in rest.values()) else head
        parts = [
            f"{key.replace('_', ' ')} {text_of(part, key)}"
            for key, part in value.items()
            if part is not None
        ]
        if not parts:
            return "n/a"
        return (
            "; ".join(parts)
            if any(isinstance(v, dict) for v in value.values())
            else ", ".join(parts)
        )
    if isinstance(value, list | tuple):
        return ", ".join(text_of(part, name) for part in value)
    money = name.endswith("_usd")
    if isinstance(value, str):
        if not _numeric(value):
            return value
        return usd(value) if money else number(Decimal(value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return usd(value) if money else number(value)
    return number(value) if isinstance(value, bool) else str(value)


def named_cases(rows: list[dict[str, Any]], *, limit: int = 20) -> str:
    """The first `limit` case keys, quoted, with "and N more" for the rest."""
    shown = ", ".join(f"`{row['case']}`" for row in rows[:limit])
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


def failed_cases(result: Result) -> list[dict[str, Any]]:
    """The cases the server judged failed (flaky ones too: they did not pass every repetition)."""
    return [row for row in result.cases if row.get("status") in ("failed", "flaky")]
