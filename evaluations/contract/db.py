"""The totals of stored runs by database aggregates, the contract's inputs.

`run_totals(run)` (`evaluations.contract.runs`) fills a `VariantTotals` with four aggregate
queries whatever the number of trials, or one for a finished run, whose totals are stored;
`runs_totals(runs)` does the same for many runs in the same number of queries. It makes the
per-trial judgements `add_trial` makes for a trial file, on plain columns:

- outcomes and completions from `Trial.declared_complete` and `Trial.outcome_verdict` (`""`:
  no outcome state, a coverage defect when the trial declared completion);
- windows and effects from the counts `evaluations.engine.evidence.contract_counts` stores;
- task quality from the run's quality grader (the dataset version's one `quality_grader`
  check), counted where it ran; none named: quality is n/a, never 0. Scores are summed in
  millionths, as `export_run` writes them, so a run and its export agree;
- cost: a trial's agent cost plus the judge spend bound to it, covered when the agent cost is
  billed and every judge call priced; judge spend bound to no trial is added to the run's
  (`evaluations.costs`: `trials_with_judge_cost`, `trial_cost`, `unattributed_judge_spend`).

docs/contract.md, "Stored runs, imported trials and the decision", says it for a person.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from django.db.models import (
    Count,
    DecimalField,
    F,
    FloatField,
    Q,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce, Floor

from evaluations.choices import (
    BillingCoverage,
    CheckStatus,
    CostKind,
    OutcomeVerdict,
    TrialStatus,
)
from evaluations.contract.totals import COUNT_FIELDS, VariantTotals
from evaluations.models import CheckResult, CostEntry, Trial
from sherlock.core.fields import MoneyField

MONEY: DecimalField = MoneyField(total=True)
ZERO = Value(Decimal(0), output_field=MONEY)
# Quality scores are carried in millionths: summed exactly in SQL (integers), written the same
# way by the export.
SCORE_UNITS = 1_000_000
GRADER_RAN = (CheckStatus.PASSED, CheckStatus.FAILED, CheckStatus.SCORED)


def score_units(score: float) -> int:
    """A quality score in millionths, rounded half-up with the same double-precision steps as
    the database aggregate (``FLOOR(score * 1e6 + 0.5)``), so both give the same integer."""
    return math.floor(score * SCORE_UNITS + 0.5)


def _trial_aggregates(unpriced) -> dict[str, Any]:
    """The aggregates of the run's trials; ``unpriced`` holds the ids of the trials with an
    unpriced judge call, whose cost is therefore not covered (``trial_cost``)."""
    declared = Q(declared_complete=True)
    covered = ~Q(pk__in=unpriced)
    billed = covered & Q(billing_coverage=BillingCoverage.BILLED, cost_usd__isnull=False)
    estimated = covered & Q(billing_coverage=BillingCoverage.ESTIMATED)
    agent_cost = Coalesce(F("cost_usd"), ZERO)
    aggregates = {
        "runs": Count("pk"),
        "declared_complete": Count("pk", filter=declared),
        "outcomes_verified": Count("pk", filter=Q(outcome_verdict=OutcomeVerdict.VERIFIED)),
        "false_successes": Count("pk", filter=declared & Q(outcome_verdict=OutcomeVerdict.FAILED)),
        "unverified_completions": Count(
            "pk", filter=declared & Q(outcome_verdict=OutcomeVerdict.UNAVAILABLE)
        ),
        "completions_without_outcome": Count("pk", filter=declared & Q(outcome_verdict="")),
        "billed_runs": Count("pk", filter=billed),
        "billed_usd": Coalesce(Sum(agent_cost, filter=billed, output_field=MONEY), ZERO),
        "estimated_runs": Count("pk", filter=estimated),
        "estimated_usd": Coalesce(Sum(agent_cost, filter=estimated, output_field=MONEY), ZERO),
    }
    for name in COUNT_FIELDS:
        aggregates[name] = Coalesce(Sum(name), 0)
    # Aggregate aliases may not shadow the Trial columns they read: prefix them.
    return {f"total_{name}": aggregate for name, aggregate in aggregates.items()}


def record_aggregates(unpriced=()) -> dict[str, Any]:
    """The aggregates `trial_totals_of` counts a run's trials with, for any rows that carry
    `Trial`'s contract columns (`declared_complete`, `outcome_verdict`, the `COUNT_FIELDS`,
    `cost_usd`, `billing_coverage`): production traces' scores are counted by the same
    judgements (`production.online.contract`). Keys are `total_<VariantTotals field>`; the
    caller sets `missing_cost_runs` (runs less billed and estimated), as `trial_totals_of` does."""
    return _trial_aggregates(list(unpriced))


def trial_totals(run) -> VariantTotals:
    """The run's ``VariantTotals`` from its trials and their judge spend, in two aggregate
    queries whatever the number of trials; quality (``quality_totals``) and the judge spend
    bound to no trial (``unattributed_judge_spend``) are not in it (``trial_totals_of``)."""
    return trial_totals_of([run])[run.pk]


def trial_totals_of(runs) -> dict[int, VariantTotals]:
    """``{run pk: VariantTotals}`` of ``runs`` from their trials and judge spend, grouped by
    run: two aggregate queries whatever the number of runs and trials.

    A trial's cost is its agent cost plus its judge spend (``trial_cost``): the trials'
    aggregate sums the agent cost of the covered trials and the judge lines' aggregate the
    judge spend of the same trials, which adds up to the same exact sum without a subquery per
    trial. A trial with an unpriced judge call (few, found once) is not covered. A cancelled
    trial never ran (a run cancelled, or stopped early): it is no trial of the contract. A run
    without trials has all-zero totals."""
    runs = list(runs)
    ids = [run.pk for run in runs]
    unpriced = CostEntry.objects.filter(
        trial__run_id__in=ids, kind=CostKind.SCORING, usd__isnull=True
    ).values("trial_id")
    rows: dict[int, dict[str, Any]] = {
        row["run_id"]: {name: value for name, value in row.items() if name != "run_id"}
        for row in Trial.objects.filter(run_id__in=ids)
        .exclude(status=TrialStatus.CANCELLED)
        .values("run_id")
        .annotate(**_trial_aggregates(unpriced))
        .order_by()
    }
    covered = ~Q(trial_id__in=unpriced)
    judge: dict[int, dict[str, Any]] = {
        row["trial__run_id"]: dict(row)
        for row in CostEntry.objects.filter(trial__run_id__in=ids, kind=CostKind.SCORING)
        .values("trial__run_id")
        .annotate(
            billed=Sum(
                "usd",
                filter=covered
                & Q(trial__billing_coverage=BillingCoverage.BILLED, trial__cost_usd__isnull=False),
            ),
            estimated=Sum(
                "usd", filter=covered & Q(trial__billing_coverage=BillingCoverage.ESTIMATED)
            ),
        )
        .order_by()
    }
    result = {}
    for run in runs:
        row = rows.get(run.pk, {})
        totals = VariantTotals(
            variant=run_variant(run),
            **{name.removeprefix("total_"): value for name, value in row.items()},
        )
        totals.missing_cost_runs = totals.runs - totals.billed_runs - totals.estimated_runs
        spend = judge.get(run.pk, {})
        totals.billed_usd += spend.get("billed") or 0
        totals.estimated_usd += spend.get("estimated") or 0
        result[run.pk] = totals
    return result


def quality_totals(run) -> tuple[int, Decimal]:
    """(graded trials, sum of their quality scores) of the run's quality grader: one query."""
    return quality_totals_of([run]).get(run.pk, (0, Decimal(0)))


def quality_totals_of(runs) -> dict[int, tuple[int, Decimal]]:
    """``{run pk: (graded trials, sum of their quality scores)}`` of the runs' quality graders,
    grouped by run: one query; a run with no graded trial is left out."""
    rows = (
        CheckResult.objects.filter(
            trial__run_id__in=[run.pk for run in runs],
            check_config__quality_grader=True,
            score__isnull=False,
            status__in=GRADER_RAN,
        )
        .values("trial__run_id")
        .annotate(
            graded=Count("pk"),
            units=Sum(Floor(F("score") * SCORE_UNITS + 0.5), output_field=FloatField()),
        )
        .order_by()
    )
    return {
        row["trial__run_id"]: (row["graded"], Decimal(int(row["units"] or 0)) / SCORE_UNITS)
        for row in rows
    }


def run_variant(run) -> str:
    return f"{run.agent_version} run #{run.pk}"
