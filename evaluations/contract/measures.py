"""Totals + thresholds -> the five measures and the gates in the contract's order.

Nothing here looks at a trial: ``evaluate`` only reads a ``VariantTotals``, so totals summed
from trial records and totals summed by the database give the same result. Nothing here knows
a publishing policy either: ``evaluate`` takes plain ``Thresholds``; the release decision that
applies a policy (and adds the checks-scored and case-pass-rate gates) is governance's
(``governance.publishing.decision``). ``PASS``/``FAIL``/``NOT_APPLICABLE`` are the statuses of every
gate, here and in governance's decision snapshot: defined here, once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction
from typing import Any

from evaluations.contract.inputs import Thresholds, parse_thresholds
from evaluations.contract.totals import VariantTotals, accumulate
from sherlock.core.money import usd

PASS = "pass"
FAIL = "fail"
NOT_APPLICABLE = "n/a"

# The contract's fixed gate order. "quality" is only evaluated when the policy sets a floor.
GATE_ORDER = ("coverage", "false_success", "unknown_effects", "floors", "budget", "quality")
GATE_LABELS = {
    "coverage": "coverage",
    "false_success": "false success",
    "unknown_effects": "unknown effects",
    "floors": "floors",
    "budget": "budget",
    "quality": "quality",
}

CENT = Decimal("0.01")
THOUSANDTH = Decimal("0.001")
# z for a two-sided 95 % interval, the conventional 1.96.
WILSON_Z = 1.96


def round_half_up(numerator: Decimal | int, denominator: int, quantum: Decimal) -> Decimal:
    """``numerator / denominator`` rounded half-up to ``quantum`` (CENT or THOUSANDTH).

    The quotient is taken with 60 significant digits: a rational with a realistic denominator
    cannot fall within 1e-60 of a rounding boundary without being exactly on it, so the single
    half-up rounding below is the exact one (0.125 -> 0.13, where banker's rounding gives 0.12).
    """
    if denominator <= 0:
        raise ValueError("denominator must be positive")
    with localcontext() as ctx:
        ctx.prec = 60
        quotient = Decimal(numerator) / Decimal(denominator)
        return quotient.quantize(quantum, rounding=ROUND_HALF_UP)


def wilson_interval(successes: int, n: int, z: float = WILSON_Z) -> tuple[float, float]:
    """The Wilson score interval for ``successes`` out of ``n`` (two-sided; 95 % with z=1.96).

    Wilson rather than the normal approximation because the rates that matter here sit at or
    near zero (0/30 false successes), where the normal interval collapses to [0, 0].
    """
    if n <= 0:
        raise ValueError("n must be positive")
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half_width = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return (max(0.0, centre - half_width), min(1.0, centre + half_width))


@dataclass(frozen=True)
class Ratio:
    """k/n with its Wilson 95 % interval when n is large enough (None below, and when n = 0)."""

    num: int
    den: int
    wilson95: tuple[float, float] | None = None

    @property
    def value(self) -> Fraction | None:
        return Fraction(self.num, self.den) if self.den else None

    def __str__(self) -> str:
        return f"{self.num}/{self.den}"


def _ratio(num: int, den: int, wilson_min_n: int) -> Ratio:
    interval = wilson_interval(num, den) if den and den >= wilson_min_n else None
    return Ratio(num, den, interval)


@dataclass(frozen=True)
class GateResult:
    """One gate of the decision. ``parts`` holds per-floor statuses for the floors gate."""

    name: str
    status: str  # "pass" or "fail"
    detail: str
    parts: tuple[tuple[str, str], ...] = ()

    @property
    def passed(self) -> bool:
        """Not failed: ``n/a`` (nothing to judge, or evidence the policy does not require) does
        not fail the contract."""
        return self.status != FAIL


@dataclass(frozen=True)
class ContractResult:
    """The five measures, the gates and the decision for one variant."""

    variant: str
    runs: int
    declared_complete: int
    quality_mean: Decimal | None  # 3 decimals, None when no trial was graded
    graded: int
    useful_progress: Ratio
    excluded_wait_windows: int
    stalled_wait_windows: int
    stale_collector_windows: int
    tool_effect_integrity: Ratio  # verified / (verified + failed + unknown)
    effects_failed: int
    effects_unknown: int
    intentionally_denied: int
    effects_without_state: int
    cost_per_run_usd: Decimal | None  # cents, over trials with billed cost
    cost_per_verified_outcome_usd: Decimal | None  # cents, None when unavailable
    verified_outcomes: int
    billed_runs: int
    billed_usd: Decimal
    estimated_runs: int
    estimated_usd: Decimal
    missing_cost_runs: int
    false_success: Ratio
    unverified_completions: int
    completions_without_outcome: int
    gates: tuple[GateResult, ...]
    totals: VariantTotals = field(repr=False, compare=False)

    @property
    def first_failing_gate(self) -> str | None:
        return next((gate.name for gate in self.gates if not gate.passed), None)

    @property
    def release(self) -> str:
        return FAIL if self.first_failing_gate else PASS

    def gate(self, name: str) -> GateResult:
        return next(gate for gate in self.gates if gate.name == name)

    def as_dict(self) -> dict[str, Any]:
        """The JSON object of ``manage.py contract --json`` (money in cents, quality 3 dp)."""
        return {
            "variant": self.variant,
            "runs": self.runs,
            "declared_complete": self.declared_complete,
            "quality": {
                "mean": _float(self.quality_mean),
                "graded": self.graded,
                "declared": self.declared_complete,
            },
            "useful_progress": {
                "num": self.useful_progress.num,
                "den": self.useful_progress.den,
                "excluded_wait_windows": self.excluded_wait_windows,
            },
            "tool_effects": {
                "verified": self.tool_effect_integrity.num,
                "failed": self.effects_failed,
                "unknown": self.effects_unknown,
                "den": self.tool_effect_integrity.den,
                "intentionally_denied": self.intentionally_denied,
            },
            "cost_per_run_usd": _float(self.cost_per_run_usd),
            "cost_per_verified_outcome_usd": _float(self.cost_per_verified_outcome_usd),
            "billing_coverage": {"billed": self.billed_runs, "runs": self.runs},
            "false_success": {
                "num": self.false_success.num,
                "den": self.false_success.den,
                "wilson95": list(self.false_success.wilson95)
                if self.false_success.wilson95
                else None,
            },
            "unverified_completion": self.unverified_completions,
            "gates": {gate.name: gate.status for gate in self.gates},
            "first_failing_gate": self.first_failing_gate,
            "release": self.release,
        }


def _float(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def evaluate(totals: VariantTotals, limits: Thresholds) -> ContractResult:
    """Turn one variant's totals into the five measures, the gates (in the contract's fixed order,
    every gate evaluated even after one fails) and the contract's verdict, under ``limits``
    read once by ``parse_thresholds`` (a caller holding a trial file's object or a policy's
    values reads it first; governance reads a policy in ``governance.publishing.decision``)."""
    t = totals

    quality_mean = round_half_up(t.quality_sum, t.graded, THOUSANDTH) if t.graded else None
    progress = _ratio(t.windows_with_evidence_delta, t.active_windows, limits.wilson_min_n)
    integrity = _ratio(
        t.effects_verified,
        t.effects_verified + t.effects_failed + t.effects_unknown,
        limits.wilson_min_n,
    )
    false_success = _ratio(t.false_successes, t.declared_complete, limits.wilson_min_n)
    cost_per_run = round_half_up(t.billed_usd, t.billed_runs, CENT) if t.billed_runs else None
    # Zero verified outcomes: nothing was bought, so the figure is unavailable, not $0. With no
    # billed cost at all the numerator is unknown, and $0 would be a lie too.
    cost_per_outcome = (
        round_half_up(t.billed_usd, t.outcomes_verified, CENT)
        if t.outcomes_verified and t.billed_runs
        else None
    )

    gates = [
        _coverage_gate(t, limits),
        _false_success_gate(t, false_success, limits),
        _count_gate(
            "unknown_effects",
            t.effects_unknown,
            limits.max_unknown_effects,
            f"{t.effects_unknown} tool effect(s) with unknown destination state",
        ),
        _floors_gate(progress, integrity, limits),
        _budget_gate(cost_per_outcome, t, limits),
    ]
    if limits.min_quality is not None:
        gates.append(_quality_gate(quality_mean, limits.min_quality))

    return ContractResult(
        variant=t.variant,
        runs=t.runs,
        declared_complete=t.declared_complete,
        quality_mean=quality_mean,
        graded=t.graded,
        useful_progress=progress,
        excluded_wait_windows=t.excluded_wait_windows,
        stalled_wait_windows=t.stalled_wait_windows,
        stale_collector_windows=t.stale_collector_windows,
        tool_effect_integrity=integrity,
        effects_failed=t.effects_failed,
        effects_unknown=t.effects_unknown,
        intentionally_denied=t.effects_denied,
        effects_without_state=t.effects_without_state,
        cost_per_run_usd=cost_per_run,
        cost_per_verified_outcome_usd=cost_per_outcome,
        verified_outcomes=t.outcomes_verified,
        billed_runs=t.billed_runs,
        billed_usd=t.billed_usd,
        estimated_runs=t.estimated_runs,
        estimated_usd=t.estimated_usd,
        missing_cost_runs=t.missing_cost_runs,
        false_success=false_success,
        unverified_completions=t.unverified_completions,
        completions_without_outcome=t.completions_without_outcome,
        gates=tuple(gates),
        totals=t,
    )


def _coverage_gate(t: VariantTotals, limits: Thresholds) -> GateResult:
    """Is every outcome, effect and cost recorded, and, when the policy asks for it, verified?

    A declared completion whose outcome no verifier could check (``unavailable``: the case has
    no outcome verifier, or it could not answer) is recorded but not verified. It fails this
    gate only under a policy with ``requires_verified_outcomes``; otherwise the gate reads
    ``n/a`` and names them, never ``pass`` (docs/contract.md, "A dataset without outcome
    verifiers")."""
    defects = [
        (t.completions_without_outcome, "declared completion(s) without an outcome state"),
        (t.effects_without_state, "effectful tool attempt(s) without a destination state"),
        (
            0 if limits.priced_usage_is_recorded else t.estimated_runs,
            "trial(s) with estimated cost",
        ),
        (t.missing_cost_runs, "trial(s) with missing cost"),
        (t.unpriced_judge_calls, "judge call(s) of the run with no price"),
    ]
    found = "; ".join(f"{count} {what}" for count, what in defects if count)
    unverified = t.unverified_completions
    unverified_note = (
        f"{unverified} of {t.declared_complete} declared completion(s) unverified "
        "(no outcome verifier gave a verdict)"
    )
    if unverified and limits.requires_verified_outcomes:
        parts = [found] if found and limits.coverage_required else []
        parts.append(f"{unverified_note}: the policy requires verified outcomes")
        return GateResult("coverage", FAIL, "; ".join(parts))
    if found and limits.coverage_required:
        return GateResult("coverage", FAIL, found)
    recorded = f"not required by the policy ({found})" if found else ""
    verified_any = t.declared_complete - unverified - t.completions_without_outcome > 0
    if unverified and not verified_any:
        # Nothing verified at all: "pass" would read as "every outcome checked".
        detail = f"{unverified_note}; outcome verification is not required by the policy"
        return GateResult("coverage", NOT_APPLICABLE, f"{detail}; {recorded}" if found else detail)
    if found:
        return GateResult("coverage", PASS, recorded)
    if unverified:
        return GateResult(
            "coverage", PASS, f"every outcome, tool effect and cost is recorded ({unverified_note})"
        )
    return GateResult("coverage", PASS, "every outcome, tool effect and cost is recorded")


def _false_success_gate(t: VariantTotals, ratio: Ratio, limits: Thresholds) -> GateResult:
    """The false-success veto. When no declared completion was verified either way, the rate
    is unknown, not 0: the gate reads ``n/a`` and says so (coverage decides whether that is
    acceptable: ``requires_verified_outcomes``)."""
    judged = t.declared_complete - t.unverified_completions - t.completions_without_outcome
    if t.declared_complete and judged <= 0 and not t.false_successes:
        return GateResult(
            "false_success",
            NOT_APPLICABLE,
            f"false-success rate unknown: none of {t.declared_complete} declared completions "
            "was verified at the destination",
        )
    return _count_gate(
        "false_success",
        t.false_successes,
        limits.max_false_successes,
        f"{ratio} declared completions failed their outcome check",
    )


def _count_gate(name: str, count: int, maximum: int, what: str) -> GateResult:
    status = PASS if count <= maximum else FAIL
    sign = "<=" if status == PASS else ">"
    return GateResult(name, status, f"{what}: {count} {sign} max {maximum}")


def _floor(label: str, ratio: Ratio, minimum: Decimal | None) -> tuple[str, str]:
    if minimum is None:
        return PASS, f"{label} {ratio}: no floor set"
    if not ratio.den:
        # A floor with an empty denominator does not apply and is shown as "n/a".
        return NOT_APPLICABLE, f"{label} n/a (nothing to count)"
    ok = Fraction(ratio.num, ratio.den) >= Fraction(minimum)
    shown = round_half_up(ratio.num, ratio.den, THOUSANDTH)
    return (PASS if ok else FAIL), f"{label} {ratio} = {shown} {'>=' if ok else '<'} {minimum}"


def _floors_gate(progress: Ratio, integrity: Ratio, limits: Thresholds) -> GateResult:
    progress_status, progress_detail = _floor(
        "useful progress", progress, limits.min_useful_progress
    )
    integrity_status, integrity_detail = _floor(
        "tool-effect integrity", integrity, limits.min_tool_effect_integrity
    )
    status = FAIL if FAIL in (progress_status, integrity_status) else PASS
    return GateResult(
        "floors",
        status,
        f"{progress_detail}; {integrity_detail}",
        parts=(("useful_progress", progress_status), ("tool_effect_integrity", integrity_status)),
    )


def _budget_gate(cost: Decimal | None, t: VariantTotals, limits: Thresholds) -> GateResult:
    """The policy's budget per verified outcome. No budget set: nothing to exceed, whatever the
    evidence (the cost figure, or why it is unavailable, is still said). A budget set and no
    figure to hold against it fails closed."""
    maximum = limits.max_cost_per_verified_outcome_usd
    if cost is None:
        reason = "no verified outcome" if not t.outcomes_verified else "no billed cost"
        if maximum is None:
            return GateResult(
                "budget", PASS, f"no budget set (cost per verified outcome unavailable: {reason})"
            )
        return GateResult(
            "budget",
            FAIL,
            f"cost per verified outcome unavailable ({reason}) against a budget of {usd(maximum)}",
        )
    if maximum is None:
        return GateResult("budget", PASS, f"{usd(cost)} per verified outcome; no budget set")
    ok = cost <= maximum
    shown, limit = usd(cost), usd(maximum)
    if shown == limit and cost != maximum:  # "$1.01 > max $1.01": the digits that differ
        shown, limit = usd(cost, 4), usd(maximum, 4)
    return GateResult(
        "budget",
        PASS if ok else FAIL,
        f"{shown} per verified outcome {'<=' if ok else '>'} max {limit}",
    )


def _quality_gate(mean: Decimal | None, minimum: Decimal) -> GateResult:
    if mean is None:
        return GateResult("quality", FAIL, "no trial was graded, so quality is unavailable")
    ok = mean >= minimum
    return GateResult(
        "quality", PASS if ok else FAIL, f"quality {mean} {'>=' if ok else '<'} {minimum}"
    )


def compute_contract(
    trials: Iterable[Any],
    thresholds: Thresholds | Mapping[str, Any] | None = None,
    locations: Sequence[str] | None = None,
) -> list[ContractResult]:
    """Trial records + thresholds -> one ``ContractResult`` per variant, in file order."""
    limits = parse_thresholds(thresholds)
    return [evaluate(totals, limits) for totals in accumulate(trials, locations)]
