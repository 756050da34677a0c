"""A run's verdict under a publishing policy: the one function every surface asks.

The run page, the run list, the compare page and API, ``GET /api/v1/runs/{id}/verdict/``,
``manage.py evaluate`` and the publish decision (``governance.decision.decide``, which the
``gate`` command and the publish page read) all reach a verdict through ``verdicts_of`` (runs
judged one by one) or ``gate_verdict`` (a publish request's gate runs judged together). Both
build the same ``Verdict`` by ``_judge``, so no two surfaces can disagree on a run and policy.

Evaluations may not import governance (the layers of pyproject.toml), so a policy reaches this
module as plain data, an ``AppliedThresholds`` (``evaluations.contract.applied``): its contract
``Thresholds`` (with ``requires_verified_outcomes``), its ``min_case_pass_rate`` and its name,
made by governance's ``policy_thresholds``/``policy_applied`` from the ``PublishingPolicy``
row. Without one, the defaults apply and the verdict says so (``policy`` is null).

The verdict, in order:

- **pending** while a run has not finished (numbers from it are not evidence), exit code null;
- **incomplete** (exit 2) when a run failed or was cancelled, or when nothing failed but some
  evidence could not be had: blocking check results skipped or in error, trials in error
  (the ``checks_scored`` gate). A trial in error has no cost to record, so under a policy
  that requires coverage it also fails the coverage gate; when those trials are all that
  coverage lacks, that failure is the same missing evidence, not a failure of the agent
  (``_coverage_wants_errored``): the verdict is incomplete;
- **failed** (exit 1) when any other gate fails: the contract's (coverage, false success,
  unknown effects, floors, budget, quality) or the policy's case pass rate;
- **passed** (exit 0) otherwise.

``missing`` names the evidence the run lacks, whatever the outcome, each with what to do and
where it is documented: outcome verification (cases without an outcome verifier), a judge
(blocking model checks skipped: ``evaluations.judge.setup.NO_JUDGE``), a quality grader under
a quality floor, billing. Missing evidence fails the verdict only where the policy asks for it
(docs/contract.md, "A dataset without outcome verifiers").

A constant number of queries for any number of runs: the thresholds provider (one), the runs'
stored figures (``runs_totals``, ``trials_in_error``), one grouped query for the unscored
results of runs without figures, and, only when some run has them, two grouped counts: of the
errored trials (their cases, and how many have no billed cost), and of the cases with
unscored results.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from django.db.models import Count, Max, Q

from evaluations.choices import (
    RUN_TERMINAL,
    BillingCoverage,
    CheckStatus,
    RunStatus,
    TrialStatus,
)
from evaluations.contract import (
    DEFAULT_APPLIED,
    FAIL,
    GATE_LABELS,
    GATE_ORDER,
    NOT_APPLICABLE,
    PASS,
    AppliedThresholds,
    ContractResult,
    Thresholds,
    applied_thresholds,
    combine,
    evaluate,
)
from evaluations.contract.db import runs_totals, trials_in_error
from evaluations.contract.measures import round_half_up
from evaluations.scoring import JUDGE_UNAVAILABLE

PASSED, FAILED, INCOMPLETE, PENDING = "passed", "failed", "incomplete", "pending"
OUTCOMES = (PASSED, FAILED, INCOMPLETE, PENDING)
EXIT_CODES = {PASSED: 0, FAILED: 1, INCOMPLETE: 2, PENDING: None}
# The gate that fails on what could not be scored: its failure alone makes a run incomplete.
EVIDENCE_GATE = "checks_scored"
POLICY_GATE_LABELS = {
    **GATE_LABELS,
    "checks_scored": "blocking checks scored",
    "case_pass_rate": "case pass rate",
}


def gate_label(name) -> str:
    """A gate named in words, as the run page names it ("blocking checks scored", never
    `checks_scored`): the one table of names, `POLICY_GATE_LABELS`."""
    return POLICY_GATE_LABELS.get(name, str(name).replace("_", " ")) if name else ""


def doc_url(doc: str, heading: str = "") -> str:
    """The served page of docs/<doc>.md at ``heading`` (``evaluations.admin.docs.doc_url``)."""
    from evaluations.admin.docs import doc_url as served

    return served(doc, heading)


@dataclass(frozen=True)
class Gate:
    """One gate: ``state`` pass/fail/n/a, ``value`` what it read, ``bound`` what it applied."""

    name: str
    label: str
    state: str
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


# --- entry points ---------------------------------------------------------------------------


def run_verdict(run, applied: AppliedThresholds | None = None) -> Verdict:
    """The verdict of one run under ``applied`` (default: the policy in force for its agent,
    through governance's provider, else the defaults). Reads ``run.agent_version.agent``."""
    return verdicts_of([run], applied)[run.pk]


def verdicts_of(runs: Iterable, applied: AppliedThresholds | None = None) -> dict[int, Verdict]:
    """``{run pk: Verdict}``, each run judged alone, under ``applied`` or, when None, the policy
    in force for each run's agent (one call to the provider for all). A constant number of
    queries whatever the number of runs (the module docstring)."""
    runs = list(runs)
    if not runs:
        return {}
    if applied is None:
        in_force = applied_thresholds(run.agent_version.agent for run in runs)
        terms = {run.pk: in_force[run.agent_version.agent_id] for run in runs}
    else:
        terms = {run.pk: applied for run in runs}
    finished = [run for run in runs if run.status in RUN_TERMINAL]
    evidence = _Evidence(finished)
    return {
        run.pk: _judge([run], terms[run.pk], evidence)
        if run in finished
        else _pending([run], terms[run.pk])
        for run in runs
    }


def gate_verdict(runs: Sequence, applied: AppliedThresholds) -> Verdict:
    """The verdict of a publish request's gate runs together (one agent version on its gate
    datasets): their trials' contract counted together, every run's checks scored and case
    pass rate. Fails closed: no run, a run that did not complete, runs of more than one
    version."""
    runs = list(runs)
    if any(run.status not in RUN_TERMINAL for run in runs):
        return _pending(runs, applied)
    return _judge(runs, applied, _Evidence(runs), together=True)


# --- the one rule ---------------------------------------------------------------------------


class _Evidence:
    """What the verdict reads of finished runs, fetched once for all of them."""

    def __init__(self, runs: list):
        self.totals = runs_totals(runs) if runs else {}
        self.errors = trials_in_error(runs) if runs else {}
        self.unscored = _unscored_groups(runs)
        self.errored = _errored_trials([r for r in runs if self.errors.get(r.pk)])
        self.unscored_cases = _cases_unscored(
            [r for r in runs if sum(g["n"] for g in self.unscored.get(r.pk, []))]
        )
        # The tools behind unknown effects, for the fix of that gate: one query for all the
        # runs that have any.
        self.unknown_causes = unknown_effect_causes(
            [r for r in runs if getattr(self.totals.get(r.pk), "effects_unknown", 0)]
        )


def _pending(runs: list, applied: AppliedThresholds) -> Verdict:
    waiting = [run for run in runs if run.status not in RUN_TERMINAL]
    status = waiting[0].status if waiting else (runs[0].status if runs else "")
    return Verdict(
        runs=tuple(run.pk for run in runs),
        status=status,
        outcome=PENDING,
        applied=applied,
        reasons=tuple(
            Reason("run_not_finished", f"run #{run.pk} is {run.status}", f"run {run.status}")
            for run in waiting
        ),
        gates=(),
        cases=_case_counts(runs, None),
        missing=(),
    )


def _judge(runs: list, applied: AppliedThresholds, evidence: _Evidence, together=False) -> Verdict:
    limits = applied.thresholds
    if len(runs) == 1:
        totals = evidence.totals[runs[0].pk]
    else:
        versions = {run.agent_version_id for run in runs}
        variant = str(runs[0].agent_version) if len(versions) == 1 else "no single version"
        totals = combine(variant, [evidence.totals[run.pk] for run in runs])
    contract = evaluate(totals, limits)
    gates = [_contract_gate(contract, name, limits) for name in GATE_ORDER]
    incomplete = [run.pk for run in runs if run.status != RunStatus.COMPLETED]
    problems = []
    if not runs:
        problems.append("no gate run")
    if incomplete:
        problems.append(f"run(s) {', '.join(f'#{pk}' for pk in incomplete)} did not complete")
    waiting = [run.pk for run in runs if run.status == RunStatus.WAITING]
    if waiting:
        # A client version's gate runs are fulfilled by its client (docs/client.md).
        problems.append(
            f"run(s) {', '.join(f'#{pk}' for pk in waiting)} waiting for the client "
            "(`sherlock run`)"
        )
    if len({run.agent_version_id for run in runs}) > 1:
        problems.append("the runs are of more than one agent version")
    coverage = gates[0]
    if problems:
        # Fail closed (numbers from unfinished runs are not evidence).
        gates[0] = Gate(
            coverage.name,
            coverage.label,
            FAIL,
            "; ".join([*problems, coverage.detail]),
            {**coverage.value, "incomplete_runs": incomplete},
            coverage.bound,
        )
    else:
        gates[0] = Gate(
            coverage.name,
            coverage.label,
            coverage.state,
            coverage.detail,
            {**coverage.value, "incomplete_runs": []},
            coverage.bound,
        )
    errored_cost = _errored_cost(runs, evidence)
    wanting = not problems and _coverage_wants_errored(contract, limits, errored_cost)
    if wanting:
        coverage = gates[0]
        gates[0] = replace(
            coverage,
            detail=f"{coverage.detail}: {sum(errored_cost)} of them in error, with no cost to "
            "record (the evidence is missing, the verdict incomplete)",
        )
    unscored = {run.pk: sum(g["n"] for g in evidence.unscored.get(run.pk, [])) for run in runs}
    gates.append(_checks_scored_gate(runs, unscored, evidence.errors))
    gates.append(_case_pass_rate_gate(runs, applied.min_case_pass_rate))
    missing = _missing(contract, limits, runs, evidence, errored_cost)

    reasons = []
    for run in runs:
        if run.status != RunStatus.COMPLETED:
            reasons.append(
                Reason("run_not_completed", f"run #{run.pk} {run.status}", f"run {run.status}")
            )
    # Told as a person reads them: the run's status, its cases, the contract, what went
    # unscored.
    order = {"case_pass_rate": 0, EVIDENCE_GATE: 2}
    for gate in sorted(gates, key=lambda g: order.get(g.name, 1)):
        # Coverage that fails on the trials in error alone is told by the checks-scored
        # gate's reason, which names them ("nothing failed" would be contradicted).
        told_elsewhere = gate.name == "coverage" and (wanting or (incomplete and not together))
        if gate.state == FAIL and not told_elsewhere:
            reason = _gate_reason(gate, runs, unscored, evidence.errors)
            causes = [c for run in runs for c in evidence.unknown_causes.get(run.pk, [])]
            fix, docs = gate_fix(gate, runs, causes)
            reasons.append(replace(reason, fix=fix, docs=docs))
    failed = [
        g
        for g in gates
        if g.state == FAIL and g.name != EVIDENCE_GATE and not (g.name == "coverage" and wanting)
    ]
    if incomplete:
        outcome = INCOMPLETE
    elif failed:
        outcome = FAILED
    elif any(g.state == FAIL for g in gates):
        outcome = INCOMPLETE
    else:
        outcome = PASSED
    return Verdict(
        runs=tuple(run.pk for run in runs),
        status=_status(runs),
        outcome=outcome,
        applied=applied,
        reasons=tuple(reasons),
        gates=tuple(gates),
        cases=_case_counts(runs, evidence),
        missing=tuple(missing),
        contract=contract,
    )


def _status(runs: list) -> str:
    statuses = {run.status for run in runs}
    if statuses == {RunStatus.COMPLETED}:
        return str(RunStatus.COMPLETED)
    return next((str(run.status) for run in runs if run.status != RunStatus.COMPLETED), "")


def _errored_cost(runs: list, evidence: _Evidence) -> tuple[int, int]:
    """(trials in error with missing cost, ... with estimated cost) of ``runs``."""
    rows = [evidence.errored.get(run.pk, {}) for run in runs]
    return (
        sum(row.get("missing_cost", 0) for row in rows),
        sum(row.get("estimated_cost", 0) for row in rows),
    )


def _coverage_wants_errored(
    contract: ContractResult, limits: Thresholds, errored_cost: tuple[int, int]
) -> bool:
    """Whether the coverage gate fails only because trials in error have no billed cost.

    A trial in error did not run to the end: its cost is unknown because its evidence is, and
    the checks-scored gate already names it. An unavailable verdict is never turned
    into a failure (nor a success), so a coverage failure that the errored trials alone cause
    makes the verdict incomplete; one that stays without them (a completed trial without
    billed cost, an outcome or an effect without a state) is a failure."""
    missing, estimated = errored_cost
    if not (missing or estimated) or contract.first_failing_gate != "coverage":
        return False
    t = contract.totals
    rest = replace(
        t,
        missing_cost_runs=t.missing_cost_runs - missing,
        estimated_runs=t.estimated_runs - estimated,
    )
    without = evaluate(rest, limits)
    return next(g.status for g in without.gates if g.name == "coverage") != FAIL


def _gate_reason(gate: Gate, runs: list, unscored: dict, errors: dict) -> Reason:
    if gate.name == "case_pass_rate":
        counts = _case_counts(runs, None)
        decided = counts["total"] - counts["without_verdict"]
        if decided and counts["failed"]:
            beside = (
                f", {counts['without_verdict']} without a verdict"
                if counts["without_verdict"]
                else ""
            )
            return Reason(
                gate.name,
                f"{counts['failed']} of {decided} cases failed{beside} ({gate.detail})",
                f"{counts['failed']}/{decided} cases failed",
            )
        return Reason(gate.name, f"case pass rate: {gate.detail}", "no case pass rate")
    if gate.name == EVIDENCE_GATE:
        n = sum(unscored.values())
        e = sum(errors.get(run.pk, 0) for run in runs)
        parts, short = [], []
        if n:
            plural = "s" if n > 1 else ""
            parts.append(f"{n} blocking check result{plural} not scored")
            short.append(f"{n} blocking result{plural} unscored")
        if e:
            parts.append(f"{e} trial(s) in error")
            short.append(f"{e} trial(s) in error")
        return Reason(gate.name, "; ".join(parts) or gate.detail, "; ".join(short))
    return Reason(
        gate.name,
        f"the contract fails at {gate.label}: {gate.detail}",
        f"contract: {gate.label}",
    )


# --- what fixes a failed gate -----------------------------------------------------------------

# The docs' section of each gate (docs/contract.md, "Fixing a failed gate").
GATE_DOCS = {
    "coverage": "Coverage",
    "false_success": "False success",
    "unknown_effects": "Unknown effects",
    "floors": "Floors",
    "budget": "Budget",
    "quality": "Quality",
    "checks_scored": "Blocking checks scored",
    "case_pass_rate": "Case pass rate",
}
REGISTER_TOOLS = "Admin → Agents → Tools; a Builder of the agent may, an Admin may share one"


def register_tool_url(agent, name) -> str:
    """The admin's form to register tool `name` for `agent` (filled in), as a path."""
    from urllib.parse import urlencode

    from django.urls import reverse

    query = {"name": name, **({"agent": agent.pk} if agent is not None else {})}
    return f"{reverse('admin:agents_tool_add')}?{urlencode(query)}"


def gate_fix(gate: Gate, runs: list, causes=()) -> tuple[str, str]:
    """(what to do about ``gate``'s failure, the docs' section that explains it): what the gate
    measures, what failed in these runs, who may change it. ``causes``: the runs' unknown
    effects as ``unknown_effect_causes`` counts them."""
    docs = doc_url("contract", GATE_DOCS.get(gate.name, ""))
    value = gate.value if isinstance(gate.value, dict) else {}
    if gate.name == "coverage":
        parts = []
        if value.get("missing_cost_trials") or value.get("estimated_cost_trials"):
            sentence = report_cost_fix(runs)
            parts.append(sentence[:1].lower() + sentence[1:])
        if value.get("unpriced_judge_calls"):
            parts.append(
                "give the judge's model a price (Admin → Model prices; a judge on your own "
                "server: SHERLOCK_JUDGE_FREE=true)"
            )
        if value.get("completions_without_outcome") or value.get("unverified_completions"):
            parts.append("give the dataset's cases an outcome verifier (`outcome_check`)")
        if value.get("effects_without_state"):
            parts.append(f"give every effectful tool a verifier ({REGISTER_TOOLS})")
        fix = "; ".join(parts) or "see the coverage gate's detail"
        return f"Coverage measures whether the evidence is complete: {fix}.", docs
    if gate.name == "false_success":
        return (
            "False success counts declared completions whose outcome check found the work not "
            "done: open the failed trials on the run page (outcome failed) and fix the agent, "
            "or the outcome verifier if it is wrong.",
            docs,
        )
    if gate.name == "unknown_effects":
        merged: dict[tuple[str, str], int] = {}
        for name, why, n in causes:  # the runs of a gate verdict, counted together
            merged[(name, why)] = merged.get((name, why), 0) + n
        causes = sorted(((name, why, n) for (name, why), n in merged.items()), key=lambda c: -c[2])
        unregistered = sorted({name for name, why, _ in causes if why == UNREGISTERED})
        unverified = sorted({name for name, why, _ in causes if why == NO_VERIFIER})
        parts = []
        if unregistered:
            agent = runs[0].agent_version.agent if runs else None
            where = "; ".join(register_tool_url(agent, name) for name in unregistered[:3])
            whose = f" as {agent.slug}'s tools" if agent is not None else " as tools"
            parts.append(
                f"register {', '.join(repr(n) for n in unregistered)}{whose} with a verifier "
                f"that reads the destination (a Builder of the agent registers them: {where})"
            )
        if unverified:
            parts.append(
                f"give {', '.join(repr(n) for n in unverified)} a verifier ({REGISTER_TOOLS})"
            )
        other = [f"{name}: {why} ({n})" for name, why, n in causes if why not in MARKED]
        if other:
            parts.append(f"see why their verifiers could not decide: {'; '.join(other[:5])}")
        found = "; ".join(f"{name} ({why}, {n} call(s))" for name, why, n in causes[:5])
        return (
            "Unknown effects are tool calls whose effect nobody could check at the destination"
            + (f": {found}" if found else "")
            + (f". To fix: {'; '.join(parts)}." if parts else "."),
            docs,
        )
    if gate.name == "floors":
        return (
            "Useful progress is the share of observation windows in which the agent produced "
            "evidence of progress; tool-effect integrity the share of tool effects verified at "
            "the destination (of verified, failed and unknown). The floor applies to the lower "
            "bound of the 95 % interval: more trials, or fewer stalled windows and unverified "
            "effects, raise it; an Admin sets the floors in the policy.",
            docs,
        )
    if gate.name == "budget":
        return (
            "The budget is the cost per verified outcome: lower what the agent spends, verify "
            "more of its outcomes, or an Admin raises the budget in the policy.",
            docs,
        )
    if gate.name == "quality":
        return (
            "Quality is the mean score of the dataset's quality grader: see its results on the "
            "run page; an Admin sets the floor in the policy.",
            docs,
        )
    if gate.name == "case_pass_rate":
        return (
            "The case pass rate counts the cases whose blocking checks all passed, of the "
            "cases with a verdict: open the failed cases on the run page (show: failed) for "
            "the checks that failed and why.",
            docs,
        )
    if gate.name == EVIDENCE_GATE:
        return (
            "Every blocking check must be scored and every trial must finish: see what is "
            "missing (the agent, the judge) and run again once it answers.",
            docs,
        )
    return "", docs


def report_cost_fix(runs: list) -> str:
    """How the runs' trials report what they cost, in the words of who runs the agent: a task
    run by the `sherlock` client returns `cost_usd` with its output; a server-side adapter
    reports billed cost (docs/contract.md, "Cost")."""
    client = any(str(run.agent_version.adapter) == "client" for run in runs)
    if client:
        return (
            "Return `cost_usd` with your task's output (what the call cost you; 0 for code "
            "that calls no model), or `usage` with a `model` that has a price (Admin → Model "
            "prices)"
        )
    return (
        "Have the adapter report billed cost (`cost_usd` in the agent's answer), or token "
        "usage with a price for its model (Admin → Model prices)"
    )


UNREGISTERED, NO_VERIFIER = "not registered", "no verifier"
MARKED = (UNREGISTERED, NO_VERIFIER)
_UNKNOWN_SAMPLE = 500  # trials read to name the tools behind unknown effects


def unknown_effect_causes(runs: list) -> dict[int, list[tuple[str, str, int]]]:
    """``{run pk: [(tool name, why, calls)]}`` of the runs' tool effects with unknown state,
    the most frequent first: ``not registered``, ``no verifier`` or the verifier's own reason.
    One query over at most ``_UNKNOWN_SAMPLE`` trials that have any, none without runs."""
    from collections import Counter

    from evaluations.models import Trial

    if not runs:
        return {}
    counted: dict[int, Counter] = {}
    effects_of = Trial.objects.filter(
        run_id__in=[run.pk for run in runs], effects_unknown__gt=0
    ).values_list("run_id", "tool_effects")[:_UNKNOWN_SAMPLE]
    for run_id, effects in effects_of:
        for effect in effects if isinstance(effects, list) else ():
            if not isinstance(effect, dict) or effect.get("state") != "unknown":
                continue
            # Imported trials carry the evidence they were given: a dict, a string, anything.
            evidence = effect.get("evidence")
            reason = evidence.get("reason") if isinstance(evidence, dict) else evidence
            reason = str(reason or "no reason given")
            if "is not registered" in reason:
                reason = UNREGISTERED
            elif reason == "the tool names no verifier":
                reason = NO_VERIFIER
            key = (str(effect.get("call") or "?")[:200], reason[:200])
            counted.setdefault(run_id, Counter())[key] += 1
    return {
        run_id: [(name, why, n) for (name, why), n in found.most_common()]
        for run_id, found in counted.items()
    }


# --- the gates ------------------------------------------------------------------------------


MILLIONTH = Decimal("0.000001")


def _json(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value


def _ratio(ratio) -> dict[str, Any]:
    return {
        "num": ratio.num,
        "den": ratio.den,
        "wilson95": list(ratio.wilson95) if ratio.wilson95 else None,
    }


def _contract_gate(result: ContractResult, name: str, limits: Thresholds) -> Gate:
    """One contract gate with the numbers it read and the threshold it applied."""
    t = result.totals
    gate = next((g for g in result.gates if g.name == name), None)
    value: dict[str, Any]
    bound: dict[str, Any]
    if name == "coverage":
        value = {
            "completions_without_outcome": t.completions_without_outcome,
            "unverified_completions": t.unverified_completions,
            "declared_complete": t.declared_complete,
            "effects_without_state": t.effects_without_state,
            "estimated_cost_trials": t.estimated_runs,
            "missing_cost_trials": t.missing_cost_runs,
            "unpriced_judge_calls": t.unpriced_judge_calls,
        }
        bound = {
            "required": limits.coverage_required,
            "requires_verified_outcomes": limits.requires_verified_outcomes,
        }
    elif name == "false_success":
        value = {
            **_ratio(result.false_success),
            "unverified_completions": result.unverified_completions,
        }
        bound = {"max": limits.max_false_successes}
    elif name == "unknown_effects":
        value = {"count": t.effects_unknown, "intentionally_denied": t.effects_denied}
        bound = {"max": limits.max_unknown_effects}
    elif name == "floors":
        parts = dict(gate.parts) if gate is not None else {}
        value = {
            "useful_progress": {
                **_ratio(result.useful_progress),
                "status": parts.get("useful_progress"),
                "excluded_wait_windows": result.excluded_wait_windows,
                "stalled_wait_windows": result.stalled_wait_windows,
                "stale_collector_windows": result.stale_collector_windows,
            },
            "tool_effect_integrity": {
                **_ratio(result.tool_effect_integrity),
                "status": parts.get("tool_effect_integrity"),
                "intentionally_denied": result.intentionally_denied,
            },
        }
        bound = {
            "min_useful_progress": _json(limits.min_useful_progress),
            "min_tool_effect_integrity": _json(limits.min_tool_effect_integrity),
        }
    elif name == "budget":
        value = {
            "cost_per_verified_outcome_usd": _json(result.cost_per_verified_outcome_usd),
            "verified_outcomes": result.verified_outcomes,
            "covered_usd": _json(result.billed_usd),
            # To the millionth, not the contract's cent: a trial's cost lives below a cent.
            "cost_per_trial_usd": _json(
                round_half_up(t.billed_usd, t.billed_runs, MILLIONTH) if t.billed_runs else None
            ),
            "estimated_usd": _json(result.estimated_usd),
        }
        bound = {"max": _json(limits.max_cost_per_verified_outcome_usd)}
    else:  # quality
        value = {"mean": _json(result.quality_mean), "graded": result.graded}
        bound = {"min": _json(limits.min_quality)}
        if gate is None:
            return Gate(
                name, GATE_LABELS[name], NOT_APPLICABLE, "no quality floor set", value, bound
            )
    assert gate is not None  # every gate but an unset quality floor is evaluated
    return Gate(name, GATE_LABELS[name], gate.status, gate.detail, value, bound)


def _checks_scored_gate(runs: list, unscored: dict, errors: dict) -> Gate:
    """Fail on what could not be scored: skipped or errored checks count neither against a case
    nor for it (a case left without a verdict is `unscored`, outside the case pass rate), so a
    run whose judge was down, or whose agent crashed on every trial, must not pass on the cases
    that remain; this gate decides whether they block. A check disabled for a case by an
    override is not blocking there, and does not count."""
    per_run = [
        {
            "run": run.pk,
            "unscored_blocking": unscored.get(run.pk, 0),
            "trials_error": errors.get(run.pk, 0),
        }
        for run in runs
    ]
    bad = [r for r in per_run if r["unscored_blocking"] or r["trials_error"]]
    if not runs:
        state, detail = FAIL, "no gate run"
    elif bad:
        state = FAIL
        detail = "; ".join(
            f"run #{r['run']}: {r['unscored_blocking']} blocking check result(s) not scored, "
            f"{r['trials_error']} trial(s) in error"
            for r in bad
        )
    else:
        state, detail = PASS, "every blocking check was scored in every trial"
    return Gate(
        "checks_scored",
        POLICY_GATE_LABELS["checks_scored"],
        state,
        detail,
        {"runs": per_run},
        {"max_unscored_blocking": 0, "max_trials_error": 0},
    )


def _case_pass_rate_gate(runs: list, minimum: float) -> Gate:
    """The policy's ``min_case_pass_rate`` (1.0 without a policy: every case must pass): every
    run must reach it; a run without a rate (not completed, or no cases) fails closed. The
    rate counts only the cases with a verdict; the unscored stand beside it in the detail, and
    a run whose every case is unscored has no rate to judge: the "blocking checks scored" gate
    says why, and this one is not applicable."""
    # Imported trials have no blocking check at all: their own words below, not these.
    undecided = {run.pk for run in runs if _all_unscored(run) and not _unjudged(run)}
    unscored = {run.pk: (run.summary or {}).get("unscored") or 0 for run in runs}
    if runs and len(undecided) == len(runs):
        return Gate(
            "case_pass_rate",
            POLICY_GATE_LABELS["case_pass_rate"],
            NOT_APPLICABLE,
            "no case has a verdict in "
            + ", ".join(f"run #{pk} ({unscored[pk]} unscored)" for pk in sorted(undecided)),
            {"runs": [{"run": run.pk, "rate": None} for run in runs]},
            {"min": minimum},
        )
    runs = [run for run in runs if run.pk not in undecided]
    rates = [(run.pk, (run.summary or {}).get("case_pass_rate")) for run in runs]
    unjudged = [run.pk for run in runs if _unjudged(run)]
    if runs and len(unjudged) == len(runs):
        # Imported trials with no checks: no case was passed or failed; the contract decides.
        return Gate(
            "case_pass_rate",
            POLICY_GATE_LABELS["case_pass_rate"],
            NOT_APPLICABLE,
            "no check passes or fails the cases of imported trials",
            {"runs": [{"run": pk, "rate": None} for pk, _ in rates]},
            {"min": minimum},
        )
    missing = [pk for pk, rate in rates if rate is None]
    low = [(pk, rate) for pk, rate in rates if rate is not None and rate < minimum]
    if not runs or missing:
        state = FAIL
        detail = (
            "no gate run"
            if not runs
            else f"no case pass rate for run(s) {', '.join(f'#{pk}' for pk in missing)}"
        )
    elif low:
        state = FAIL
        detail = "; ".join(
            f"run #{pk}: {rate:.3f} < {minimum}{_beside(unscored[pk])}" for pk, rate in low
        )
    else:
        state = PASS
        detail = "; ".join(
            f"run #{pk}: {rate:.3f} >= {minimum}{_beside(unscored[pk])}" for pk, rate in rates
        )
    return Gate(
        "case_pass_rate",
        POLICY_GATE_LABELS["case_pass_rate"],
        state,
        detail,
        {"runs": [{"run": pk, "rate": rate} for pk, rate in rates]},
        {"min": minimum},
    )


# --- what is missing ------------------------------------------------------------------------


def _missing(
    contract: ContractResult,
    limits: Thresholds,
    runs: list,
    evidence: _Evidence,
    errored_cost: tuple[int, int] = (0, 0),
):
    from evaluations.judge.setup import judge_configured, judge_named, no_judge_sentence

    found = []
    t = contract.totals
    unverified = t.unverified_completions
    if unverified:
        required = limits.requires_verified_outcomes
        found.append(
            Missing(
                "outcome_verification",
                f"{unverified} of {t.declared_complete} declared completions have no verified "
                "outcome: false success and cost per verified outcome cannot be measured"
                + (" (the policy requires verified outcomes)" if required else ""),
                "Add an outcome verifier (outcome_check) to the dataset's cases"
                + (
                    ", or an Admin turns off «requires verified outcomes» in the policy"
                    if required
                    else "; the policy does not require one (setting «requires verified "
                    "outcomes» off)"
                ),
                doc_url("contract", "A dataset without outcome verifiers"),
                fails=required,
            )
        )
    groups = [g for run in runs for g in evidence.unscored.get(run.pk, [])]
    judged_skips = sum(g["n"] for g in groups if "judge" in (g.get("reason") or ""))
    if judged_skips and not judge_configured():
        found.append(
            Missing(
                "judge",
                f"{judged_skips} blocking model check result(s) skipped: no judge is configured",
                no_judge_sentence(),
                doc_url("judges"),
                fails=True,
            )
        )
    judge_errors = [
        g
        for g in groups
        if g["status"] == CheckStatus.ERROR
        and (g.get("reason") or "").startswith(JUDGE_UNAVAILABLE)
    ]
    if judge_errors and judge_configured():
        cause = judge_errors[0]["reason"][len(JUDGE_UNAVAILABLE) :].lstrip(": ")
        found.append(
            Missing(
                "judge_unavailable",
                f"{sum(g['n'] for g in judge_errors)} blocking model check result(s) not "
                f"scored: {judge_named()} did not answer ({cause})",
                f"Make {judge_named()} answer (`manage.py check_judge` names what to change), "
                "then run again",
                doc_url("judges"),
                fails=True,
            )
        )
    errored = [evidence.errored[run.pk] for run in runs if run.pk in evidence.errored]
    if errored:
        versions = {run.agent_version_id: run.agent_version for run in runs}
        where = "; ".join(agent_where(version) for version in versions.values())
        found.append(
            Missing(
                "agent",
                f"{sum(row['trials'] for row in errored)} trial(s) in error: the agent "
                f"({where}) did not answer: {(errored[0]['error'] or 'no error recorded')[:300]}",
                "Make the agent answer (its endpoint or its code), then run again",
                doc_url("adapters"),
                fails=True,
            )
        )
    if limits.min_quality is not None and not contract.graded:
        found.append(
            Missing(
                "quality_grader",
                "the policy sets a quality floor and no trial was graded",
                "Mark one check of the dataset version as its quality grader",
                doc_url("contract", "Task quality: the quality grader"),
                fails=True,
            )
        )
    # A trial in error has no cost because it has no evidence at all: what adds it is fixing
    # the error (the checks-scored gate names those trials), not billing.
    missing_cost = t.missing_cost_runs - errored_cost[0]
    estimated_cost = t.estimated_runs - errored_cost[1]
    if missing_cost or estimated_cost:
        found.append(
            Missing(
                "billing",
                f"{missing_cost} trial(s) with missing cost, {estimated_cost} with estimated cost",
                report_cost_fix(runs),
                doc_url("contract", "Cost"),
                fails=limits.coverage_required,
            )
        )
    return found


def agent_where(version) -> str:
    """Where ``version``'s agent answers, in words: its adapter and its URL or callable (a URL
    shown without any user:password)."""
    from evaluations.judge.probe import shown_url

    config = version.config or {}
    target = config.get("url") or config.get("base_url")
    if isinstance(target, str) and target:
        return f"{version.adapter} at {shown_url(target)}"
    if isinstance(config.get("callable"), str):
        return f"{version.adapter} {config['callable']}"
    return str(version.adapter)


# --- cases ----------------------------------------------------------------------------------


def _unscored_groups(runs: list) -> dict[int, list[dict[str, Any]]]:
    """``{run pk: [{label, status, n, reason}]}`` of the blocking results skipped or in error:
    stored figures first, one grouped query for the runs without."""
    from evaluations.models import CheckResult
    from evaluations.reads.figures import stored_checks, unscored_of

    groups: dict[int, list[dict[str, Any]]] = {}
    live = []
    for run in runs:
        rows = stored_checks(run)
        if rows is None:
            live.append(run.pk)
        else:
            groups[run.pk] = unscored_of(rows)["groups"]
    if live:
        rows = (
            CheckResult.objects.filter(
                trial__run_id__in=live,
                blocking=True,
                status__in=[CheckStatus.SKIPPED, CheckStatus.ERROR],
            )
            .values("trial__run_id", "check_config__label", "status")
            .annotate(n=Count("pk"), reason=Max("reason"))
            .order_by("trial__run_id", "check_config__label", "status")
        )
        for row in rows:
            groups.setdefault(row["trial__run_id"], []).append(
                {
                    "label": row["check_config__label"],
                    "status": row["status"],
                    "n": row["n"],
                    "reason": row["reason"],
                }
            )
    return groups


def _errored_trials(runs: list) -> dict[int, dict[str, int]]:
    """``{run pk: {cases, missing_cost, estimated_cost, trials, error}}`` of the runs' trials in
    error: the cases with one, how many have no billed cost (missing or estimated), counted as
    the contract counts a trial's cost, how many there are and one of their errors; one grouped
    query, none without runs."""
    from evaluations.models import Trial

    if not runs:
        return {}
    billed = Q(billing_coverage=BillingCoverage.BILLED, cost_usd__isnull=False)
    estimated = Q(billing_coverage=BillingCoverage.ESTIMATED)
    rows = (
        Trial.objects.filter(run_id__in=[run.pk for run in runs], status=TrialStatus.ERROR)
        .values("run_id")
        .annotate(
            cases=Count("case_id", distinct=True),
            missing_cost=Count("pk", filter=~billed & ~estimated),
            estimated_cost=Count("pk", filter=estimated),
            trials=Count("pk"),
            error=Max("error"),  # one of their errors, to name the cause
        )
        .order_by()
    )
    return {row.pop("run_id"): row for row in rows}


def _cases_unscored(runs: list) -> dict[int, int]:
    """``{run pk: cases with a blocking result unscored}``: the count the run's end stored in
    its summary (`compute_case_results`: ``cases_unscored``), else (a run finished before it
    was stored) one grouped query over the check results of those runs, none without them."""
    from evaluations.models import CheckResult

    counted = {}
    ids = []
    for run in runs:
        stored = (run.summary or {}).get("cases_unscored")
        if isinstance(stored, int):
            counted[run.pk] = stored
        else:
            ids.append(run.pk)
    if not ids:
        return {pk: n for pk, n in counted.items() if n}
    rows = CheckResult.objects.filter(
        trial__run_id__in=ids,
        blocking=True,
        status__in=[CheckStatus.SKIPPED, CheckStatus.ERROR],
    ).values("trial__run_id")
    key = "trial__run_id"
    rows = rows.annotate(n=Count("trial__case_id", distinct=True)).order_by()
    return {pk: n for pk, n in counted.items() if n} | {row[key]: row["n"] for row in rows}


def _beside(unscored: int) -> str:
    return f" ({unscored} unscored case(s) not counted)" if unscored else ""


def _all_unscored(run) -> bool:
    """A completed run with cases none of which has a verdict (every one `unscored`)."""
    summary = run.summary or {}
    cases = summary.get("cases") or 0
    return (
        bool(cases) and summary.get("unscored") == cases and summary.get("case_pass_rate") is None
    )


def _unjudged(run) -> bool:
    """A run whose cases no check judged (imported trials): ``summary.passed`` is None."""
    summary = run.summary or {}
    return (
        bool(summary.get("cases"))
        and summary.get("passed") is None
        and summary.get("case_pass_rate") is None
    )


def _case_counts(runs: list, evidence: _Evidence | None) -> dict[str, int]:
    judged = [run for run in runs if not _unjudged(run)]
    total = sum((run.summary or {}).get("cases") or 0 for run in runs)
    passed = sum((run.summary or {}).get("passed") or 0 for run in judged)
    # Cases with no verdict (state `unscored`) are neither passed nor failed.
    without_verdict = sum((run.summary or {}).get("unscored") or 0 for run in judged)
    failed = sum((run.summary or {}).get("cases") or 0 for run in judged) - passed - without_verdict
    errored = unscored = 0
    if evidence is not None:
        errored = sum(evidence.errored.get(run.pk, {}).get("cases", 0) for run in runs)
        unscored = sum(evidence.unscored_cases.get(run.pk, 0) for run in runs)
    return {
        "total": total,
        "passed": passed,
        "failed": failed,
        "without_verdict": without_verdict,
        "errored": errored,
        "unscored": unscored,
    }


__all__ = [
    "DEFAULT_APPLIED",
    "EXIT_CODES",
    "FAILED",
    "INCOMPLETE",
    "OUTCOMES",
    "PASSED",
    "PENDING",
    "Gate",
    "Missing",
    "Reason",
    "Verdict",
    "doc_url",
    "gate_verdict",
    "run_verdict",
    "verdicts_of",
]
