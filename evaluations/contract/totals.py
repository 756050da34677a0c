"""Trial records -> per-variant totals: plain counts and exact sums, nothing derived.

The contract's per-trial judgements are made here, once: whether a wait is owned, whether a
completion was verified, failed or left unverified, whether an effect was denied on purpose,
whether a cost was billed. A database aggregate that fills ``VariantTotals`` must make the
same judgements (the field comments say what each counts).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from evaluations.choices import BillingCoverage, EffectState, OutcomeVerdict
from evaluations.contract.inputs import TrialRecord, TrialRecordError, read_trial


@dataclass
class VariantTotals:
    """Everything ``evaluate`` needs for one variant: counts and exact sums, nothing derived.

    Fill it from trial records with ``add_trial``/``accumulate``, or from database aggregates
    over a run's trials; the field comments say what each one counts.
    """

    variant: str
    runs: int = 0  # trials
    declared_complete: int = 0
    # Outcomes. `outcomes_verified` counts every trial whose outcome was verified at the
    # destination, declared or not: it is what the money bought (cost per verified outcome).
    outcomes_verified: int = 0
    false_successes: int = 0  # declared complete and outcome `failed`
    unverified_completions: int = 0  # declared complete and outcome `unavailable`
    completions_without_outcome: int = 0  # declared complete, no outcome state (coverage)
    # Task quality: only trials where the grader ran.
    graded: int = 0
    quality_sum: Decimal = Decimal(0)
    # Useful progress. `active_windows` already includes the windows of unowned waits
    # (`stalled_wait_windows`, which never have a delta); owned-wait windows are kept apart.
    windows_with_evidence_delta: int = 0
    active_windows: int = 0
    excluded_wait_windows: int = 0
    stalled_wait_windows: int = 0
    stale_collector_windows: int = 0
    # Tool effects of calls that were not intentionally denied, by destination state.
    effects_verified: int = 0
    effects_failed: int = 0
    effects_unknown: int = 0
    effects_denied: int = 0  # intentionally denied calls, whatever their state
    effects_without_state: int = 0  # any effectful attempt with no destination state (coverage)
    # Cost: only `billed` cost is covered cost; estimated cost is kept apart, never mixed in.
    billed_runs: int = 0
    billed_usd: Decimal = Decimal(0)
    estimated_runs: int = 0
    estimated_usd: Decimal = Decimal(0)
    missing_cost_runs: int = 0
    # Judge calls of a run that belong to no trial and have no price. (A trial's own unpriced
    # judge call makes that trial's cost `missing`.) Always 0 for trial files, whose
    # `cost.usd` already holds agent and judge spend.
    unpriced_judge_calls: int = 0


# The per-trial counts that `trial_counts` returns: `VariantTotals` fields, and the plain
# integer columns of `Trial` of the same names, so that a run's totals are one aggregate.
COUNT_FIELDS = (
    "active_windows",
    "windows_with_evidence_delta",
    "excluded_wait_windows",
    "stalled_wait_windows",
    "stale_collector_windows",
    "effects_verified",
    "effects_failed",
    "effects_unknown",
    "effects_denied",
    "effects_without_state",
)


def trial_counts(trial: TrialRecord) -> dict[str, int]:
    """One trial's window and tool-effect counts (``COUNT_FIELDS``), judged once, here.

    The same function fills the totals of a trial file and the columns of a stored trial
    (``evaluations.engine.evidence.contract_counts``), so the two can never count differently.
    """
    counts = dict.fromkeys(COUNT_FIELDS, 0)
    counts["windows_with_evidence_delta"] = trial.windows_with_evidence_delta
    counts["active_windows"] = trial.active_windows
    counts["stale_collector_windows"] = trial.stale_collector_windows
    if trial.wait_owned:
        # An owned wait is not a stall; stop the progress clock for its windows.
        counts["excluded_wait_windows"] = trial.wait_windows
    else:
        # An unowned wait (or wait windows with no wait named at all) is a stall: the windows
        # count as active and, by definition, carry no evidence delta.
        counts["active_windows"] += trial.wait_windows
        counts["stalled_wait_windows"] = trial.wait_windows

    for state, denied in trial.effects:
        if state is None:
            counts["effects_without_state"] += 1
        if denied:
            # A denied high-impact call is proof the boundary worked, not a failure.
            counts["effects_denied"] += 1
        elif state == EffectState.VERIFIED:
            counts["effects_verified"] += 1
        elif state == EffectState.FAILED:
            counts["effects_failed"] += 1
        elif state == EffectState.UNKNOWN:
            counts["effects_unknown"] += 1
    return counts


def add_trial(totals: VariantTotals, trial: TrialRecord) -> None:
    """Add one checked trial to its variant's totals."""
    totals.runs += 1

    if trial.declared_complete:
        totals.declared_complete += 1
        if trial.outcome_verdict == OutcomeVerdict.FAILED:
            totals.false_successes += 1
        elif trial.outcome_verdict == OutcomeVerdict.UNAVAILABLE:
            # Unavailable is a coverage fact, never zero and never success; it is an
            # unverified completion, kept apart from the false-success numerator.
            totals.unverified_completions += 1
        elif trial.outcome_verdict is None:
            totals.completions_without_outcome += 1
    if trial.outcome_verdict == OutcomeVerdict.VERIFIED:
        totals.outcomes_verified += 1

    if trial.grader_ran:
        totals.graded += 1
        assert trial.quality_score is not None  # a grader that ran gave a score
        totals.quality_sum += trial.quality_score

    for name, count in trial_counts(trial).items():
        setattr(totals, name, getattr(totals, name) + count)

    if trial.billing_coverage == BillingCoverage.BILLED:
        assert trial.cost_usd is not None  # billed without an amount is read as missing
        totals.billed_runs += 1
        totals.billed_usd += trial.cost_usd
    elif trial.billing_coverage == BillingCoverage.ESTIMATED:
        totals.estimated_runs += 1
        totals.estimated_usd += trial.cost_usd or Decimal(0)
    else:
        totals.missing_cost_runs += 1


def accumulate(
    trials: Iterable[Any], locations: Sequence[str] | None = None
) -> list[VariantTotals]:
    """Check trial records and sum them per variant, in order of first appearance.

    ``locations`` (one per trial, e.g. "line 3") only improves error messages. Raises
    ``TrialRecordError`` for a malformed record or a repeated trial id.
    """
    by_variant: dict[str, VariantTotals] = {}
    seen: dict[str, str] = {}
    for index, record in enumerate(trials):
        where = locations[index] if locations is not None else f"trials[{index}]"
        trial = read_trial(record, where)
        if trial.trial_id in seen:
            raise TrialRecordError(
                f"{where}: trial id {trial.trial_id!r} repeats {seen[trial.trial_id]}"
            )
        seen[trial.trial_id] = where
        totals = by_variant.get(trial.variant)
        if totals is None:
            totals = by_variant[trial.variant] = VariantTotals(variant=trial.variant)
        add_trial(totals, trial)
    return list(by_variant.values())


def combine(variant: str, parts: Iterable[VariantTotals]) -> VariantTotals:
    """Sum several totals into one (e.g. the gate runs of one version on several datasets):
    every field is a count or an exact sum, so adding them is the same as counting at once."""
    combined = VariantTotals(variant=variant)
    for part in parts:
        for name in VariantTotals.__dataclass_fields__:
            if name != "variant":
                setattr(combined, name, getattr(combined, name) + getattr(part, name))
    return combined
