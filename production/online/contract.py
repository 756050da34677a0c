"""The contract over production: the live version's five measures over sliding windows.

For each window (`SHERLOCK_PRODUCTION_WINDOWS_HOURS`, 24 and 168 by default) the scored
traces of the live version completed in it are counted by the aggregates that count a run's
trials (`evaluations.contract.db.record_aggregates`, the same per-trial judgements) and
evaluated by the contract's own `evaluate` under the thresholds of the policy in force
(`evaluations.contract.thresholds_for`): the same measures, Wilson intervals (n >= 30) and
evidence states (unavailable outcomes, coverage) as a gate run. Beside them, the contract of
the gate runs the live version was published on.

A **breach** (`breaches`) is a hard gate of the policy that the production evidence says is
broken beyond chance: the window holds at least `wilson_min_n` (30) in the gate's
denominator and the Wilson 95 % interval lies wholly on the wrong side of the limit:

- false success: the interval's lower bound above the tolerated rate, the policy's
  `max_false_successes` over the gate runs' declared completions (0 when none is allowed);
- unknown effects: the same, with `max_unknown_effects` over the gate runs' verified,
  failed and unknown effects;
- floors: the upper bound of useful progress or tool-effect integrity below the floor.

A count limit the gate runs cannot scale (no declared completion or effect in them, a limit
above 0) is not judged in production, and the window says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

from django.conf import settings
from django.db.models import Count, F, FloatField, Q, Sum
from django.db.models.functions import Floor
from django.utils import timezone

from evaluations.contract import (
    ContractResult,
    VariantTotals,
    evaluate,
    thresholds_for,
    wilson_interval,
)
from evaluations.contract.db import SCORE_UNITS, record_aggregates
from evaluations.contract.runs import runs_contract
from evaluations.costs.texts import format_usd
from governance.models import PublishRequest
from production.models import TraceScore


@dataclass
class Window:
    """One sliding window: its contract, and the breaches found in it."""

    name: str
    hours: int
    since: Any
    result: ContractResult
    breaches: list[dict] = field(default_factory=list)
    unjudged: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)


@dataclass
class ProductionContract:
    """The live version's production windows beside its gate runs' contract."""

    agent: Any
    version: Any
    applied: Any
    windows: list[Window]
    gate: ContractResult | None
    gate_request: Any

    @property
    def breaches(self) -> list[dict]:
        return [breach for window in self.windows for breach in window.breaches]


def window_hours() -> list[int]:
    return list(settings.SHERLOCK_PRODUCTION_WINDOWS_HOURS)


def window_name(hours: int) -> str:
    return f"{hours // 24} d" if hours % 24 == 0 and hours >= 48 else f"{hours} h"


def window_totals(version, since) -> VariantTotals:
    """The `VariantTotals` of `version`'s scored traces completed since `since`: one query."""
    aggregates = record_aggregates()
    graded = Q(quality_score__isnull=False)
    aggregates["total_graded"] = Count("pk", filter=graded)
    aggregates["quality_units"] = Sum(
        Floor(F("quality_score") * SCORE_UNITS + 0.5), filter=graded, output_field=FloatField()
    )
    row = TraceScore.objects.in_window(version, since).aggregate(**aggregates)
    units = row.pop("quality_units") or 0
    counted: dict[str, Any] = {
        name.removeprefix("total_"): value or 0 for name, value in row.items()
    }
    totals = VariantTotals(variant=f"{version} in production", **counted)
    totals.quality_sum = Decimal(int(units)) / SCORE_UNITS
    totals.missing_cost_runs = totals.runs - totals.billed_runs - totals.estimated_runs
    return totals


def gate_request_of(version):
    """The publish request `version` went live on (the newest published one), or None."""

    return PublishRequest.objects.published_for(version)


def production_contract(agent, now=None) -> ProductionContract | None:
    """The production contract of `agent`'s live version, or None when nothing is live."""
    version = agent.live_version
    if version is None:
        return None
    now = now or timezone.now()
    applied = thresholds_for(agent)
    limits = replace(applied.thresholds, priced_usage_is_recorded=True)
    request = gate_request_of(version)
    runs = list(request.runs.all()) if request is not None else []
    gate = runs_contract(runs, limits) if runs else None
    windows = []
    for hours in window_hours():
        since = now - timedelta(hours=hours)
        result = evaluate(window_totals(version, since), limits)
        window = Window(window_name(hours), hours, since, result)
        window.breaches, window.unjudged = breaches(result, gate, limits, window.name)
        window.unmeasured = not_measured(result)
        windows.append(window)
    return ProductionContract(agent, version, applied, windows, gate, request)


def not_measured(result: ContractResult) -> list[str]:
    """What this window's traces cannot measure, said plainly (docs/production-online.md,
    "What production measures"): a measure with nothing in its denominator although traces
    were scored is not "0" nor "pass" for this agent."""
    lines: list[Any] = []
    t = result.totals
    if not t.runs:
        return lines
    if not t.declared_complete:
        lines.append(
            "false success: not measured: no trace declared its task complete (set the "
            "sherlock.declared_complete span attribute, or name the online rule's completion "
            "tool)"
        )
    if not t.graded:
        lines.append("task quality: not measured: no check of the rule graded a trace")
    if not result.useful_progress.den:
        lines.append(
            "useful progress: not measured: the traces carry no observation windows (a "
            "production trace is one turn; progress is measured by runs)"
        )
    if not t.billed_runs and t.estimated_runs:
        lines.append(
            "cost per verified outcome: not measured from billed cost (no trace carried one); "
            f"{t.estimated_runs} traces were priced from the tokens they reported with your "
            f"model prices, {format_usd(t.estimated_usd)} in all, kept apart as estimated"
        )
    return lines


def _tolerated(maximum: int, gate_den: int | None) -> Fraction | None:
    if maximum == 0:
        return Fraction(0)
    if not gate_den:
        return None
    return Fraction(maximum, gate_den)


def breaches(result: ContractResult, gate: ContractResult | None, limits, window: str):
    """(breaches, gates not judged) of one window's contract under `limits` (see the module
    docstring); a breach is a dict the webhook and the proposal carry."""
    found, unjudged = [], []
    min_n = limits.wilson_min_n
    effects_den = result.tool_effect_integrity.den

    def rate(name, label, num, den, maximum, gate_den):
        tolerated = _tolerated(maximum, gate_den)
        if tolerated is None:
            unjudged.append(f"{label}: the gate runs have nothing to scale a limit of {maximum}")
            return
        if den < min_n:
            return
        low, high = wilson_interval(num, den)
        if Fraction(low) > tolerated:
            found.append(
                {
                    "gate": name,
                    "measure": label,
                    "window": window,
                    "num": num,
                    "den": den,
                    "wilson95": [low, high],
                    "bound": "lower",
                    "value": low,
                    "limit": float(tolerated),
                    "detail": (
                        f"{label} {num}/{den} in the last {window}: the lower Wilson bound "
                        f"{low:.3f} is above the {float(tolerated):.3f} the policy tolerates"
                    ),
                }
            )

    gate_declared = gate.declared_complete if gate is not None else None
    gate_effects = gate.tool_effect_integrity.den if gate is not None else None
    rate(
        "false_success",
        "false success",
        result.false_success.num,
        result.false_success.den,
        limits.max_false_successes,
        gate_declared,
    )
    rate(
        "unknown_effects",
        "unknown effects",
        result.effects_unknown,
        effects_den,
        limits.max_unknown_effects,
        gate_effects,
    )
    for label, ratio, minimum in (
        ("useful progress", result.useful_progress, limits.min_useful_progress),
        ("tool-effect integrity", result.tool_effect_integrity, limits.min_tool_effect_integrity),
    ):
        if minimum is None or ratio.den < min_n or ratio.wilson95 is None:
            continue
        low, high = ratio.wilson95
        if Fraction(high) < Fraction(minimum):
            found.append(
                {
                    "gate": "floors",
                    "measure": label,
                    "window": window,
                    "num": ratio.num,
                    "den": ratio.den,
                    "wilson95": [low, high],
                    "bound": "upper",
                    "value": high,
                    "limit": float(minimum),
                    "detail": (
                        f"{label} {ratio} in the last {window}: the upper Wilson bound "
                        f"{high:.3f} is below the floor {minimum}"
                    ),
                }
            )
    return found, unjudged


def lag_figures(agent, since):
    """(scored traces, p50 and p95 lag in ms) of `agent`'s traces scored since `since`: the
    lags read in one query, bounded to the newest 10,000."""
    lags = sorted(
        TraceScore.objects.filter(agent=agent, scored_at__gte=since, lag_ms__isnull=False)
        .order_by("-scored_at")
        .values_list("lag_ms", flat=True)[:10000]
    )
    if not lags:
        return 0, None, None
    return len(lags), _percentile(lags, 50), _percentile(lags, 95)


def _percentile(ordered, p):
    index = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def window_dict(window: Window) -> dict[str, Any]:
    """One window as the API shows it: the contract's own JSON (`ContractResult.as_dict`),
    the breaches and the gates it could not judge."""
    return {
        "name": window.name,
        "hours": window.hours,
        "since": window.since,
        "contract": window.result.as_dict(),
        "breaches": window.breaches,
        "not_judged": window.unjudged,
        "not_measured": window.unmeasured,
    }


def production_dict(contract: ProductionContract | None) -> dict[str, Any]:
    """The production contract of an agent as the API answers it (None: nothing live)."""
    if contract is None:
        return {"live_version": None, "thresholds": None, "windows": [], "gate": None}
    request = contract.gate_request
    return {
        "live_version": contract.version.number,
        "thresholds": contract.applied.as_dict(),
        "windows": [window_dict(window) for window in contract.windows],
        "gate": None
        if contract.gate is None
        else {
            "publish_request": request.pk,
            "runs": sorted(run.pk for run in request.runs.all()),
            "contract": contract.gate.as_dict(),
        },
    }
