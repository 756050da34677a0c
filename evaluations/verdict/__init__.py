"""A run's verdict under a publishing policy: the one function every surface asks.

The run page and list, compare, the verdict API, `manage.py evaluate` and the publish decision
reach a verdict through `verdicts_of` (runs judged one by one) or `gate_verdict` (a publish
request's gate runs judged together), both building one `Verdict` by `judge` (`rule`), so no
two surfaces can disagree on a run and policy. A policy arrives as plain data, an
`AppliedThresholds` (evaluations may not import governance); without one the defaults apply,
and the verdict says so.

The verdict is pending, incomplete (exit 2: evidence could not be had), insufficient evidence
(exit 2: a rate decided on its interval straddles its threshold, more cases would decide it),
failed (exit 1) or passed (exit 0); `missing` names the evidence a run lacks and what adds
it. A constant number of queries for any number of runs. The rule for a person:
docs/contract.md, "The verdict: one function for every surface".

The package, by job: `model` (what a verdict is), `rule` (the one rule), `gates`, `cases`
(what is read of the runs), `missing` (evidence lacking) and `fixes` (what fixes a gate).
"""

from evaluations.contract import DEFAULT_APPLIED
from evaluations.verdict.model import (
    EXIT_CODES,
    FAILED,
    INCOMPLETE,
    INSUFFICIENT,
    OUTCOME_WORDS,
    OUTCOMES,
    PASSED,
    PENDING,
    POLICY_GATE_LABELS,
    Gate,
    Missing,
    Reason,
    Verdict,
    doc_url,
    gate_label,
)
from evaluations.verdict.rule import gate_verdict, run_verdict, verdicts_of

__all__ = [
    "DEFAULT_APPLIED",
    "EXIT_CODES",
    "FAILED",
    "INCOMPLETE",
    "INSUFFICIENT",
    "OUTCOMES",
    "OUTCOME_WORDS",
    "PASSED",
    "PENDING",
    "POLICY_GATE_LABELS",
    "Gate",
    "Missing",
    "Reason",
    "Verdict",
    "doc_url",
    "gate_label",
    "gate_verdict",
    "run_verdict",
    "verdicts_of",
]
