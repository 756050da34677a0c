"""The one rule: runs to a `Verdict` (`verdicts_of` one by one, `gate_verdict` together),
pending, incomplete, failed or passed (docs/contract.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from evaluations.choices import (
    RUN_TERMINAL,
    RunStatus,
)
from evaluations.contract import (
    FAIL,
    GATE_ORDER,
    AppliedThresholds,
    ContractResult,
    Thresholds,
    applied_thresholds,
    combine,
    evaluate,
)
from evaluations.reads.judge_error import MIN_SAMPLE
from evaluations.verdict.cases import Evidence, case_counts
from evaluations.verdict.corrected import corrected_gate
from evaluations.verdict.fixes import gate_fix
from evaluations.verdict.gates import case_pass_rate_gate, checks_scored_gate, contract_gate
from evaluations.verdict.missing import missing_evidence
from evaluations.verdict.model import (
    EVIDENCE_GATE,
    FAILED,
    INCOMPLETE,
    INSUFFICIENT,
    PASSED,
    PENDING,
    Gate,
    Reason,
    Verdict,
    doc_url,
)
from evaluations.verdict.paired import case_outcomes, live_runs, regression_gate


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
    evidence = Evidence(finished)
    paired = [run for run in finished if terms[run.pk].max_regression is not None]
    live = live_runs(paired) if paired else {}
    # Every paired run's case outcomes in one query, whatever the number of runs.
    found = [run.pk for run in paired if live.get(run.pk)] + [
        other.pk for other in live.values() if other is not None
    ]
    outcome = case_outcomes(found) if found else None
    return {
        run.pk: _judge([run], terms[run.pk], evidence, pairs=_pairs([run], live), outcome=outcome)
        if run in finished
        else _pending([run], terms[run.pk])
        for run in runs
    }


def _pairs(runs: list, live: dict) -> list:
    """Each of ``runs`` with its live run (`live_runs`), for those that have a live version."""
    return [(run, live[run.pk]) for run in runs if run.pk in live]


def gate_verdict(runs: Sequence, applied: AppliedThresholds, live: Sequence = ()) -> Verdict:
    """The verdict of a publish request's gate runs together (one agent version on its gate
    datasets): their trials' contract counted together, every run's checks scored and case
    pass rate, and, under a policy with a margin, the runs paired with ``live`` (the live
    version's runs the request pairs them with, by dataset version). Fails closed: no run, a
    run that did not complete, runs of more than one version."""
    runs, live = list(runs), list(live)
    if any(run.status not in RUN_TERMINAL for run in [*runs, *live]):
        return _pending([*runs, *live], applied)
    by_dataset = {run.dataset_version_id: run for run in live}
    pairs = [(run, by_dataset.get(run.dataset_version_id)) for run in runs] if live else []
    return _judge(runs, applied, Evidence(runs), together=True, pairs=pairs)


# --- the one rule ---------------------------------------------------------------------------


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
        cases=case_counts(runs, None),
        missing=(),
    )


def _judge(  # noqa: C901
    runs: list,
    applied: AppliedThresholds,
    evidence: Evidence,
    together=False,
    pairs=(),
    outcome=None,
) -> Verdict:
    limits = applied.thresholds
    if len(runs) == 1:
        totals = evidence.totals[runs[0].pk]
    else:
        versions = {run.agent_version_id for run in runs}
        variant = str(runs[0].agent_version) if len(versions) == 1 else "no single version"
        totals = combine(variant, [evidence.totals[run.pk] for run in runs])
    contract = evaluate(totals, limits)
    repetitions = max((run.repetitions for run in runs), default=1)
    gates = [contract_gate(contract, name, limits, applied, repetitions) for name in GATE_ORDER]
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
    gates.append(checks_scored_gate(runs, unscored, evidence.errors))
    sequences = evidence.sequences
    gates.append(case_pass_rate_gate(runs, applied.min_case_pass_rate, applied, sequences))
    if applied.max_regression is not None:
        confidence = applied.case_pass_rate_confidence
        gates.append(
            regression_gate(
                pairs,
                applied.max_regression,
                confidence,
                publishing=together,
                outcome=outcome,
                sequences=sequences,
            )
        )
    if applied.corrected_checks:
        gates.append(
            corrected_gate(runs, applied.corrected_checks, applied.case_pass_rate_confidence)
        )
    missing = missing_evidence(contract, limits, runs, evidence, errored_cost)

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
    elif any(g.state == INSUFFICIENT for g in gates):
        outcome = INSUFFICIENT
        reasons.extend(insufficient_reason(g) for g in gates if g.state == INSUFFICIENT)
    else:
        outcome = PASSED
    return Verdict(
        runs=tuple(run.pk for run in runs),
        status=_status(runs),
        outcome=outcome,
        applied=applied,
        reasons=tuple(reasons),
        gates=tuple(gates),
        cases=case_counts(runs, evidence),
        missing=tuple(missing),
        contract=contract,
    )


def _status(runs: list) -> str:
    statuses = {run.status for run in runs}
    if statuses == {RunStatus.COMPLETED}:
        return str(RunStatus.COMPLETED)
    return next((str(run.status) for run in runs if run.status != RunStatus.COMPLETED), "")


def _errored_cost(runs: list, evidence: Evidence) -> tuple[int, int]:
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


def insufficient_reason(gate: Gate) -> Reason:
    """A gate its interval left undecided: what it read, and what would most likely decide it
    (`evaluations.verdict.gates`, `evaluations.verdict.paired`)."""
    rows = (gate.value.get("runs") or []) if isinstance(gate.value, dict) else []
    more = [r["more_cases_to_decide"] for r in rows if r.get("more_cases_to_decide")]
    short = f"~{max(more)} more cases would most likely decide it" if more else "undecided"
    if gate.name == "floors":
        return Reason(
            gate.name,
            f"the {gate.label} are undecided: {gate.detail}",
            f"{gate.label}: undecided",
            fix="More trials (more cases: repetitions weigh as one) narrow the floors' "
            "intervals; or, as an Admin, bypass with a reason.",
            docs=doc_url("contract", "Deciding on the interval"),
        )
    if gate.name == "corrected_rates":
        rows = [r for r in gate.value.get("checks", []) if r["decision"] == INSUFFICIENT]
        few = [r for r in rows if r["sample_labels"] < MIN_SAMPLE]
        return Reason(
            gate.name,
            f"the {gate.label} are undecided: {gate.detail}",
            f"{gate.label}: undecided",
            fix=(
                f"Label at least {MIN_SAMPLE} results of the run from the labelling queue's "
                f"sample ({few[0]['label_url']}), "
                if few
                else "Label more of the run's results from the labelling queue's sample, "
            )
            + "which narrows the interval; or, as an Admin, bypass with a reason.",
            docs=doc_url("checks", "Gating on the corrected rate"),
        )
    if gate.name == "regression":
        return Reason(
            gate.name,
            f"{gate.label} is undecided: {gate.detail}",
            f"{gate.label}: undecided",
            fix="More cases in the gate dataset narrow the paired interval; a live run that is "
            "missing or did not complete is run again by requesting publication again. Or, as "
            "an Admin, bypass with a reason.",
            docs=doc_url("contract", "Paired against the live version"),
        )
    return Reason(
        gate.name,
        f"the {gate.label} is undecided: {gate.detail}",
        short,
        fix="Add cases to the gate dataset and run it again (the case is the unit: repetitions "
        "of the same cases do not narrow the interval), or, as an Admin, bypass with a reason.",
        docs=doc_url("contract", "Deciding on the interval"),
    )


def _gate_reason(gate: Gate, runs: list, unscored: dict, errors: dict) -> Reason:
    if gate.name == "case_pass_rate":
        counts = case_counts(runs, None)
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
    if gate.name == "regression":
        value = gate.value.get("paired") or {}
        return Reason(
            gate.name,
            f"{gate.label} fails: {gate.detail}",
            f"{value.get('only_live', '?')} case(s) regressed against live",
        )
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
