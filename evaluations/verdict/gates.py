"""The gates a verdict reads: the contract's five measures, the checks-scored gate and the
policy's case pass rate.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from evaluations.contract import (
    FAIL,
    GATE_LABELS,
    NOT_APPLICABLE,
    PASS,
    ContractResult,
    Thresholds,
)
from evaluations.contract.applied import DEFAULT_APPLIED, AppliedThresholds
from evaluations.contract.measures import round_half_up
from evaluations.stats import (
    INSUFFICIENT,
    cases_to_decide,
    decide_on_interval,
    wilson,
    wilson_weighed,
)
from evaluations.stats.decide import VERBS
from evaluations.verdict.cases import is_all_unscored, is_unjudged, unscored_beside
from evaluations.verdict.model import POLICY_GATE_LABELS, Gate
from evaluations.verdict.sequential import decide_rate, words
from sherlock.core.json_values import exact

MILLIONTH = Decimal("0.000001")
# `AppliedThresholds.case_pass_rate_decides_on` when the gate reads the interval.
ON_INTERVAL = "interval"


def _ratio(ratio) -> dict[str, Any]:
    return {
        "num": ratio.num,
        "den": ratio.den,
        "wilson95": list(ratio.wilson95) if ratio.wilson95 else None,
    }


def contract_gate(
    result: ContractResult,
    name: str,
    limits: Thresholds,
    applied: AppliedThresholds | None = None,
    repetitions: int = 1,
) -> Gate:
    """One contract gate with the numbers it read and the threshold it applied; the floors on
    their interval when ``applied`` says so (``floors_on_interval``)."""
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
            "min_useful_progress": exact(limits.min_useful_progress),
            "min_tool_effect_integrity": exact(limits.min_tool_effect_integrity),
        }
    elif name == "budget":
        value = {
            "cost_per_verified_outcome_usd": exact(result.cost_per_verified_outcome_usd),
            "verified_outcomes": result.verified_outcomes,
            "covered_usd": exact(result.billed_usd),
            # To the millionth, not the contract's cent: a trial's cost lives below a cent.
            "cost_per_trial_usd": exact(
                round_half_up(t.billed_usd, t.billed_runs, MILLIONTH) if t.billed_runs else None
            ),
            "estimated_usd": exact(result.estimated_usd),
        }
        bound = {"max": exact(limits.max_cost_per_verified_outcome_usd)}
    else:  # quality
        value = {"mean": exact(result.quality_mean), "graded": result.graded}
        bound = {"min": exact(limits.min_quality)}
        if gate is None:
            return Gate(
                name, GATE_LABELS[name], NOT_APPLICABLE, "no quality floor set", value, bound
            )
    assert gate is not None  # every gate but an unset quality floor is evaluated
    if name == "floors" and applied is not None and applied.floors_decide_on == ON_INTERVAL:
        return floors_on_interval(result, limits, applied, repetitions, value, bound)
    return Gate(name, GATE_LABELS[name], gate.status, gate.detail, value, bound)


def floors_on_interval(
    result: ContractResult,
    limits: Thresholds,
    applied: AppliedThresholds,
    repetitions: int,
    value: dict,
    bound: dict,
) -> Gate:
    """The floors decided on their Wilson interval at the policy's confidence: each floor
    passes when its whole interval clears it, fails when the whole interval misses it, and is
    otherwise undecided. Trials of one case are not independent: with repetitions, each count
    is divided by them (a case's trials weigh as one, the most cautious reading)."""
    confidence = applied.case_pass_rate_confidence
    states, parts = [], []
    floors = (
        ("useful_progress", "useful progress", result.useful_progress, limits.min_useful_progress),
        (
            "tool_effect_integrity",
            "tool-effect integrity",
            result.tool_effect_integrity,
            limits.min_tool_effect_integrity,
        ),
    )
    value = {name: dict(part) for name, part in value.items()}
    for key, said, ratio, minimum in floors:
        if minimum is None or not ratio.den:
            state = PASS if minimum is None else NOT_APPLICABLE
            parts.append(f"{said} {ratio}: " + ("no floor set" if minimum is None else "n/a"))
        else:
            interval = wilson_weighed(ratio.num, ratio.den, repetitions, confidence)
            state = decide_on_interval(interval, float(minimum))
            span = f"{interval.low:.3f}–{interval.high:.3f}"
            parts.append(
                f"{said} {ratio}, {confidence:.0%} interval {span} {VERBS[state]} {minimum}"
            )
            value[key].update(interval=[round(interval.low, 6), round(interval.high, 6)])
        value[key]["status"] = state
        states.append(state)
    state = FAIL if FAIL in states else INSUFFICIENT if INSUFFICIENT in states else PASS
    detail = "; ".join(parts)
    if repetitions > 1:
        detail += f" (the {repetitions} repetitions of a case weigh as one)"
    bound = {**bound, "decides_on": ON_INTERVAL, "confidence": confidence}
    return Gate("floors", GATE_LABELS["floors"], state, detail, value, bound)


def checks_scored_gate(runs: list, unscored: dict, errors: dict) -> Gate:
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


def case_pass_rate_gate(
    runs: list,
    minimum: float,
    applied: AppliedThresholds | None = None,
    sequences: dict | None = None,
) -> Gate:
    """The policy's ``min_case_pass_rate`` (1.0 without a policy: every case must pass): every
    run must reach it; a run without a rate (not completed, or no cases) fails closed. The
    rate counts only the cases with a verdict; the unscored stand beside it in the detail, and
    a run whose every case is unscored has no rate to judge: the "blocking checks scored" gate
    says why, and this one is not applicable. A policy that decides on the interval
    (``case_pass_rate_decides_on``) reads each run's Wilson interval instead of its rate
    (``_on_interval``); a run that stops early is read case by case in its seed's order
    (``sequences``, `evaluations.verdict.sequential`), whichever it decides on."""
    # Imported trials have no blocking check at all: their own words below, not these.
    undecided = {run.pk for run in runs if is_all_unscored(run) and not is_unjudged(run)}
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
    unjudged = [run.pk for run in runs if is_unjudged(run)]
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
    if not runs or missing:
        detail = (
            "no gate run"
            if not runs
            else f"no case pass rate for run(s) {', '.join(f'#{pk}' for pk in missing)}"
        )
        return Gate(
            "case_pass_rate",
            POLICY_GATE_LABELS["case_pass_rate"],
            FAIL,
            detail,
            {"runs": [{"run": pk, "rate": rate} for pk, rate in rates]},
            {"min": minimum},
        )
    if sequences and any(run.pk in sequences for run in runs):
        return _in_seed_order(runs, minimum, applied or DEFAULT_APPLIED, sequences, unscored)
    if applied is not None and applied.case_pass_rate_decides_on == ON_INTERVAL:
        return _on_interval(runs, minimum, applied.case_pass_rate_confidence, unscored)
    low = [(pk, rate) for pk, rate in rates if rate is not None and rate < minimum]
    if low:
        state = FAIL
        detail = "; ".join(
            f"run #{pk}: {rate:.3f} < {minimum}{unscored_beside(unscored[pk])}" for pk, rate in low
        )
    else:
        state = PASS
        detail = "; ".join(
            f"run #{pk}: {rate:.3f} >= {minimum}{unscored_beside(unscored[pk])}"
            for pk, rate in rates
        )
    return Gate(
        "case_pass_rate",
        POLICY_GATE_LABELS["case_pass_rate"],
        state,
        detail,
        {"runs": [{"run": pk, "rate": rate} for pk, rate in rates]},
        {"min": minimum},
    )


def _on_interval(runs: list, minimum: float, confidence: float, unscored: dict) -> Gate:
    """The case pass rate gate decided on each run's Wilson interval at ``confidence``: a run
    passes when its whole interval clears ``minimum``, fails when its whole interval misses it,
    and otherwise has insufficient evidence, with the number of cases that would most likely
    decide it. The case is the unit (a case passes when all its repetitions do), so the
    repetitions of one case are never counted as independent trials. Any run failing fails
    the gate; else any run undecided leaves it insufficient."""
    rows, parts = [], []
    for run in runs:
        summary = run.summary or {}
        passed = int(summary.get("passed") or 0)
        decided = int(summary.get("cases") or 0) - int(summary.get("unscored") or 0)
        interval = wilson(passed, decided, confidence)
        state = decide_on_interval(interval, minimum)
        needed = (
            cases_to_decide(interval.rate, minimum, confidence) if state == INSUFFICIENT else None
        )
        more = max(1, needed - decided) if needed is not None else None
        rows.append(
            {
                "run": run.pk,
                "rate": summary.get("case_pass_rate"),
                "passed": passed,
                "cases": decided,
                "interval": [round(interval.low, 6), round(interval.high, 6)],
                "decision": state,
                "more_cases_to_decide": more,
            }
        )
        span = f"{interval.low:.3f}–{interval.high:.3f}"
        part = (
            f"run #{run.pk}: {passed}/{decided} cases, {interval.rate:.3f}, "
            f"{confidence:.0%} interval {span} {VERBS[state]} {minimum}"
        )
        if state == INSUFFICIENT:
            part += (
                f"; about {more} more case(s) would most likely decide it"
                if more is not None
                else "; the rate sits on the threshold: no number of cases is likely to decide it"
            )
        parts.append(part + unscored_beside(unscored[run.pk]))
    decisions = {row["decision"] for row in rows}
    # The decisions' words are the contract's gate states (`pass`, `fail`) and `insufficient`.
    state = FAIL if FAIL in decisions else INSUFFICIENT if INSUFFICIENT in decisions else PASS
    return Gate(
        "case_pass_rate",
        POLICY_GATE_LABELS["case_pass_rate"],
        state,
        "; ".join(parts),
        {"runs": rows},
        {"min": minimum, "decides_on": ON_INTERVAL, "confidence": confidence},
    )


def _in_seed_order(
    runs: list, minimum: float, applied: AppliedThresholds, sequences: dict, unscored: dict
) -> Gate:
    """The gate with the runs that stop early read in seed order (`decide_rate`: by betting on
    the interval, by certainty on the point estimate), the others as usual; the states
    combine as across runs: any fail fails, else any undecided is insufficient."""
    others = [run for run in runs if run.pk not in sequences]
    rows, parts, states = [], [], []
    if others:
        gate = case_pass_rate_gate(others, minimum, applied)
        rows.extend(gate.value.get("runs", []))
        parts.append(gate.detail)
        states.append(gate.state)
    confidence = applied.case_pass_rate_confidence
    for run in runs:
        if run.pk not in sequences:
            continue
        found = decide_rate(
            sequences[run.pk], minimum, applied.case_pass_rate_decides_on, confidence
        )
        states.append(found.decision)
        rows.append(
            {
                "run": run.pk,
                "rate": (run.summary or {}).get("case_pass_rate"),
                "passed": int(found.passed),
                "cases": found.judged,
                "decision": found.decision,
                "after_cases": found.at,
                "seed": run.seed,
            }
        )
        how = (
            f"tested case by case at {confidence:.0%}"
            if applied.case_pass_rate_decides_on == ON_INTERVAL
            else "certain whatever the cases left do"
        )
        parts.append(
            f"run #{run.pk}: {int(found.passed)}/{found.judged} cases passed, "
            f"{words(found)} ({how}): {found.decision} against {minimum}"
            + unscored_beside(unscored.get(run.pk, 0))
        )
    state = FAIL if FAIL in states else INSUFFICIENT if INSUFFICIENT in states else PASS
    return Gate(
        "case_pass_rate",
        POLICY_GATE_LABELS["case_pass_rate"],
        state,
        "; ".join(parts),
        {"runs": rows},
        {
            "min": minimum,
            "decides_on": applied.case_pass_rate_decides_on,
            "confidence": confidence,
            "in_seed_order": True,
        },
    )
