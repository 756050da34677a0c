"""The contract of stored runs, read as the release decision reads them: a run's totals (its
stored figures when it finished, else live aggregates, `evaluations.contract.db`), the judge spend
bound to no trial, the contract under plain thresholds, and what could not be scored.

``run_contract(run, thresholds)`` evaluates a run's totals; ``runs_contract(runs, thresholds)``
the totals of several runs together (a publish request's gate runs); ``unscored_blocking`` and
``trials_in_error`` count, per run, what could not be scored. This is all the release decision
reads of a run (``governance.publishing.decision``): the contract knows thresholds, never a policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.db.models import Count

from evaluations.choices import CheckStatus, TrialStatus
from evaluations.contract.db import quality_totals_of, trial_totals_of
from evaluations.contract.inputs import Thresholds, parse_thresholds
from evaluations.contract.measures import ContractResult, evaluate
from evaluations.contract.totals import VariantTotals, combine
from evaluations.costs.ledger import unattributed_judge_spend_of
from evaluations.models import CheckResult, Trial
from evaluations.reads.figures import stored_checks, stored_totals, stored_trials_error


def run_totals(run) -> VariantTotals:
    """The run's ``VariantTotals`` (see the module docstring; ``runs_totals`` of it)."""
    return runs_totals([run])[run.pk]


def runs_totals(runs) -> dict[int, VariantTotals]:
    """``{run pk: VariantTotals}`` of ``runs`` in a constant number of queries whatever the
    number of runs and trials. A run that finished carries its trials' totals in
    ``Run.figures`` (``evaluations.reads.figures``, computed once by the same functions); the others
    are aggregated live, grouped by run (three queries, only when there is such a run). The
    judge spend bound to no trial, which may still be recorded against a finished run, is read
    for every run (one grouped query)."""
    runs = list(runs)
    stored = {run.pk: stored_totals(run) for run in runs}
    totals = {pk: value for pk, value in stored.items() if value is not None}
    live = [run for run in runs if stored[run.pk] is None]
    if live:
        totals.update(trial_totals_of(live))
        quality = quality_totals_of(live)
        for run in live:
            totals[run.pk].graded, totals[run.pk].quality_sum = quality.get(run.pk, (0, Decimal(0)))
    spend = unattributed_judge_spend_of(runs)
    for run in runs:
        priced_usd, totals[run.pk].unpriced_judge_calls = spend.get(run.pk, (Decimal(0), 0))
        totals[run.pk].billed_usd += priced_usd
    return totals


def run_contract(run, thresholds: Thresholds | Mapping[str, Any] | None) -> ContractResult:
    """The five measures and gates of one run (``thresholds`` as accepted by
    ``parse_thresholds``: a ``Thresholds``, a trial file's object, plain limits by
    ``THRESHOLD_FIELDS``, or None for the default thresholds), read once."""
    return evaluate(run_totals(run), parse_thresholds(thresholds))


def runs_contract(runs: Iterable, thresholds: Thresholds) -> ContractResult:
    """The five measures and gates of several runs' trials counted together (the gate runs of
    one agent version on several datasets), under plain ``thresholds``: their stored figures
    (``runs_totals``, a constant number of queries) summed by ``combine``. The variant is the
    runs' agent version, or "no single version" when they are of more than one (or none)."""
    runs = list(runs)
    versions = {run.agent_version_id for run in runs}
    variant = str(runs[0].agent_version) if len(versions) == 1 else "no single version"
    return evaluate(combine(variant, runs_totals(runs).values()), thresholds)


def trials_in_error(runs) -> dict[int, int]:
    """``{run pk: its trials in error}``: from the runs' stored figures,
    and in one grouped query for the runs without; a run with none may be left out."""
    failed, live = {}, []
    for run in runs:
        if stored_checks(run) is None:
            live.append(run.pk)
        else:
            failed[run.pk] = stored_trials_error(run)
    if live:
        failed.update(
            Trial.objects.filter(run_id__in=live, status=TrialStatus.ERROR)
            .values_list("run_id")
            .annotate(n=Count("pk"))
        )
    return failed


def unscored_blocking(runs) -> dict[int, int]:
    """``{run pk: its blocking check results skipped or in error}``: from
    the runs' stored figures, and in one grouped query for the runs without (finished before
    figures were stored, or not finished). The checks-scored gate and the runs list's verdicts
    both count them so."""
    totals, live = {}, []
    for run in runs:
        rows = stored_checks(run)
        if rows is None:
            live.append(run.pk)
        else:
            totals[run.pk] = sum(n for row in rows for n in row["unscored_blocking"].values())
    if live:
        totals.update(
            CheckResult.objects.filter(
                trial__run_id__in=live,
                blocking=True,
                status__in=[CheckStatus.ERROR, CheckStatus.SKIPPED],
            )
            .values_list("trial__run_id")
            .annotate(n=Count("pk"))
            .order_by()
        )
    return totals
