"""What a verdict is: its five outcomes and exit codes, the gates' names in words, and the
records (`Verdict`, `Gate`, `Reason`, `Missing`) every surface shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluations.admin.docs import doc_url as served
from evaluations.contract import (
    FAIL,
    GATE_LABELS,
    AppliedThresholds,
    ContractResult,
)

PASSED, FAILED, INCOMPLETE, PENDING = "passed", "failed", "incomplete", "pending"
# A gate decided on an interval that straddles its threshold: more cases would decide it. Exit
# 2 as incomplete (no decision, and more evidence would make one), never 0 nor 1.
INSUFFICIENT = "insufficient"
OUTCOMES = (PASSED, FAILED, INSUFFICIENT, INCOMPLETE, PENDING)
EXIT_CODES = {PASSED: 0, FAILED: 1, INSUFFICIENT: 2, INCOMPLETE: 2, PENDING: None}
OUTCOME_WORDS = {INSUFFICIENT: "insufficient evidence"}
# The gate that fails on what could not be scored: its failure alone makes a run incomplete.
EVIDENCE_GATE = "checks_scored"
POLICY_GATE_LABELS = {
    **GATE_LABELS,
    "checks_scored": "blocking checks scored",
    "case_pass_rate": "case pass rate",
    "regression": "no regression against live",
    "corrected_rates": "judge-corrected pass rates",
}


def gate_label(name) -> str:
    """A gate named in words, as the run page names it ("blocking checks scored", never
    `checks_scored`): the one table of names, `POLICY_GATE_LABELS`."""
    return POLICY_GATE_LABELS.get(name, str(name).replace("_", " ")) if name else ""


def doc_url(doc: str, heading: str = "") -> str:
    """The served page of docs/<doc>.md at ``heading`` (``evaluations.admin.docs.doc_url``)."""

    return served(doc, heading)


@dataclass(frozen=True)
class Gate:
    """One gate: ``state`` pass/fail/n/a, ``value`` what it read, ``bound`` what it applied."""

    name: str
    label: str
    state: str  # pass, fail, n/a, or insufficient (a rate decided on its interval)
    detail: str
    value: Any = None
    bound: Any = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "state": self.state,
            "value": self.value,
            "bound": self.bound,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Reason:
    """Why the verdict is not passed: ``code`` (a gate's name, ``run_not_completed``, ...),
    ``detail`` in full for the pages, ``short`` for a table cell, ``fix`` what to do about it
    (what the gate measures, what failed, who may change it) and ``docs`` the served docs'
    section that explains it (``gate_fixes``)."""

    code: str
    detail: str
    short: str = ""
    fix: str = ""
    docs: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "detail": self.detail, "fix": self.fix, "docs": self.docs}


@dataclass(frozen=True)
class Missing:
    """Evidence the run lacks, what adds it (``fix``) and where that is documented (``docs``,
    a path of the served docs)."""

    code: str
    detail: str
    fix: str
    docs: str
    fails: bool = False  # the policy requires it: the verdict fails closed on it

    @property
    def label(self) -> str:
        return self.code.replace("_", " ")

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "detail": self.detail, "fix": self.fix, "docs": self.docs}


@dataclass(frozen=True)
class Verdict:
    """One verdict of one run (or of a publish request's gate runs together) under one policy."""

    runs: tuple[int, ...]
    status: str
    outcome: str
    applied: AppliedThresholds
    reasons: tuple[Reason, ...]
    gates: tuple[Gate, ...]
    cases: dict[str, int]
    missing: tuple[Missing, ...]
    contract: ContractResult | None = field(default=None, compare=False)

    @property
    def exit_code(self) -> int | None:
        return EXIT_CODES[self.outcome]

    @property
    def passed(self) -> bool:
        return self.outcome == PASSED

    @property
    def words(self) -> str:
        """The outcome as a person reads it ("insufficient evidence")."""
        return OUTCOME_WORDS.get(self.outcome, self.outcome)

    @property
    def first_failing_gate(self) -> str | None:
        return next((gate.name for gate in self.gates if gate.state == FAIL), None)

    @property
    def first_failing_label(self) -> str:
        first = self.first_failing_gate
        return POLICY_GATE_LABELS.get(first, "") if first else ""

    @property
    def reason_texts(self) -> list[str]:
        return [reason.detail for reason in self.reasons]

    @property
    def blocking_missing(self) -> list[Missing]:
        """The missing evidence the policy requires (the verdict fails closed on it)."""
        return [item for item in self.missing if item.fails]

    @property
    def short(self) -> list[str]:
        """The reasons in a few words, for a table cell: the first failing contract gate
        stands for the contract (the run page lists them all)."""
        shown, contract = [], False
        for reason in self.reasons:
            text = reason.short or reason.detail
            if text.startswith("contract: "):
                if contract:
                    continue
                contract = True
            shown.append(text)
        return shown

    @property
    def policy(self) -> dict[str, Any] | None:
        if self.applied.policy_id is None:
            return None
        return {"id": self.applied.policy_id, "name": self.applied.policy_name}

    def gate(self, name: str) -> Gate | None:
        return next((gate for gate in self.gates if gate.name == name), None)

    def as_dict(self, *, run: int | None = None, url: str = "") -> dict[str, Any]:
        """The body of ``GET /api/v1/runs/{id}/verdict/`` (docs/api.md, "Verdict")."""
        return {
            "run": run if run is not None else (self.runs[0] if len(self.runs) == 1 else None),
            "url": url,
            "status": self.status,
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "policy": self.policy,
            "thresholds": self.applied.source,
            "reasons": [reason.as_dict() for reason in self.reasons],
            "gates": [gate.as_dict() for gate in self.gates],
            "cases": dict(self.cases),
            "missing": [item.as_dict() for item in self.missing],
        }
