"""The contract of stored runs: totals by database aggregates, the contract, the decision.

``run_totals(run)`` fills a ``VariantTotals`` with four aggregate queries whatever the number
of trials (trials; their judge spend; quality-grader results; judge spend bound to no trial),
or one for a finished run, whose trials' totals are stored (``evaluations.figures``);
``runs_totals(runs)`` does the same for many runs at once, in the same number of queries,
grouped by run. It makes the same
per-trial judgements as ``add_trial`` does for a trial file, on plain columns:

- outcomes and completions from ``Trial.declared_complete`` and ``Trial.outcome_verdict``
  (``""`` is "no outcome state", a coverage defect when the trial declared completion);
- windows and effects from the count columns that ``evaluations.evidence.contract_counts``
  derives from ``progress``, ``wait`` and ``tool_effects`` (the same ``trial_counts``);
- task quality from the run's **quality grader**: the one check of the dataset version with
  ``Check.quality_grader`` set. Its score counts on a trial when the grader actually ran
  (status passed, failed or scored; skipped and error are "did not run"). A run whose dataset
  version names no grader has no graded trial: quality is n/a (never 0), and a policy with a
  quality floor fails closed on it. Scores are summed in millionths, exactly, the same way
  ``export_run`` writes them, so the contract of a run and of its export agree;
- cost (seed 003: "total covered run cost, agent + judge"): a trial's cost is its agent cost
  (``Trial.cost_usd``) plus the judge spend bound to it (``CostEntry`` of kind ``scoring``).
  It is covered (``billed``) when the agent cost is billed and every one of its judge calls
  has a price; a judge call without a price makes the trial's cost ``missing``. Judge spend of
  the run bound to no trial is added to the covered cost, or, unpriced, is a coverage defect.
  The per-trial cost and the run-level spend are read through ``evaluations.costs``
  (``trials_with_judge_cost``, ``trial_cost`` judging one trial as this aggregate does, and
  ``unattributed_judge_spend``).

``run_contract(run, thresholds)`` evaluates those totals. ``decide(runs, policy)`` is the
release decision of a publish request, as a JSON-ready snapshot: every gate in seed 003's order
with its numbers, threshold and status (``pass``/``fail``/``n/a``), then the policy's
``min_case_pass_rate``; the first failing gate and the ``release`` verdict. It fails closed:
no runs, a run that did not complete or a case pass rate that is missing all fail.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
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
    OutcomeVerdict,
    RunStatus,
)
from evaluations.contract.decision import (
    FAIL,
    GATE_LABELS,
    NOT_APPLICABLE,
    PASS,
    ContractResult,
    evaluate,
)
from evaluations.contract.inputs import POLICY_FIELDS, Thresholds, parse_thresholds
from evaluations.contract.totals import COUNT_FIELDS, VariantTotals, combine

MONEY: DecimalField = DecimalField(max_digits=20, decimal_places=8)
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
    trial. A trial with an unpriced judge call (few, found once) is not covered. A run without
    trials has all-zero totals."""
    from evaluations.choices import CostKind
    from evaluations.models import CostEntry, Trial

    runs = list(runs)
    ids = [run.pk for run in runs]
    unpriced = CostEntry.objects.filter(
        trial__run_id__in=ids, kind=CostKind.SCORING, usd__isnull=True
    ).values("trial_id")
    rows: dict[int, dict[str, Any]] = {
        row["run_id"]: {name: value for name, value in row.items() if name != "run_id"}
        for row in Trial.objects.filter(run_id__in=ids)
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
    from evaluations.models import CheckResult

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


def run_totals(run) -> VariantTotals:
    """The run's ``VariantTotals`` (see the module docstring; ``runs_totals`` of it)."""
    return runs_totals([run])[run.pk]


def runs_totals(runs) -> dict[int, VariantTotals]:
    """``{run pk: VariantTotals}`` of ``runs`` in a constant number of queries whatever the
    number of runs and trials. A run that finished carries its trials' totals in
    ``Run.figures`` (``evaluations.figures``, computed once by the same functions); the others
    are aggregated live, grouped by run (three queries, only when there is such a run). The
    judge spend bound to no trial, which may still be recorded against a finished run, is read
    for every run (one grouped query)."""
    from evaluations.costs import unattributed_judge_spend_of
    from evaluations.figures import stored_totals

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


def run_variant(run) -> str:
    return f"{run.agent_version} run #{run.pk}"


def run_contract(run, thresholds: Thresholds | Mapping[str, Any] | None) -> ContractResult:
    """The five measures, gates and decision of one run (``thresholds`` as accepted by
    ``parse_thresholds``: a policy's ``POLICY_FIELDS``, a trial file's object, or None)."""
    return evaluate(run_totals(run), thresholds)


def policy_thresholds(policy) -> dict[str, Any]:
    """The contract thresholds of a ``PublishingPolicy`` (its ``POLICY_FIELDS``)."""
    return {name: getattr(policy, name) for name in POLICY_FIELDS}


# --- The release decision ---------------------------------------------------------------------


def decide(runs: Iterable, policy) -> dict[str, Any]:
    """The release decision of ``runs`` (one agent version's gate runs) under ``policy``.

    Returns a JSON-ready snapshot: ``policy``, ``runs``, ``measures`` (the contract over all the
    runs' trials, as ``ContractResult.as_dict``), ``gates`` (a list in the fixed order:
    coverage, false_success, unknown_effects, floors, budget, quality, then checks_scored and
    case_pass_rate; each
    ``{name, label, status, detail, value, threshold}``), ``first_failing_gate`` and
    ``release`` (``pass`` or ``fail``). Every gate is evaluated even after one fails (seed 003).
    Reads ``run.dataset_version.dataset`` (select it with the runs) and three queries per run.
    """
    runs = list(runs)
    limits = parse_thresholds(policy_thresholds(policy))
    versions = {run.agent_version_id for run in runs}
    variant = str(runs[0].agent_version) if len(versions) == 1 else "no single version"
    result = evaluate(combine(variant, (run_totals(run) for run in runs)), limits)

    incomplete = [run.pk for run in runs if run.status != RunStatus.COMPLETED]
    gates = [_gate_snapshot(result, name, limits) for name in _CONTRACT_GATES]
    coverage = gates[0]
    problems = []
    if not runs:
        problems.append("no gate run")
    if incomplete:
        problems.append(f"run(s) {', '.join(f'#{pk}' for pk in incomplete)} did not complete")
    if len(versions) > 1:
        problems.append("the runs are of more than one agent version")
    if problems:
        # Fail closed (DESIGN section 10): numbers from unfinished runs are not evidence.
        coverage["status"] = FAIL
        coverage["detail"] = "; ".join([*problems, coverage["detail"]])
    coverage["value"]["incomplete_runs"] = incomplete
    gates.append(_checks_scored_gate(runs))
    gates.append(_case_pass_rate_gate(runs, policy.min_case_pass_rate))

    first = next((gate["name"] for gate in gates if gate["status"] == FAIL), None)
    return {
        "policy": {
            "id": policy.pk,
            "name": policy.name,
            "scope": policy.scope_key,
            "version": policy.version,
            "enforcement": policy.enforcement,
            "thresholds": {k: _json(v) for k, v in policy_thresholds(policy).items()},
            "min_case_pass_rate": policy.min_case_pass_rate,
        },
        "runs": [
            {
                "id": run.pk,
                "dataset": run.dataset_version.dataset.slug,
                "dataset_version": run.dataset_version.number,
                "status": run.status,
                "repetitions": run.repetitions,
                "summary": run.summary or {},
            }
            for run in runs
        ],
        "measures": result.as_dict(),
        "gates": gates,
        "first_failing_gate": first,
        "release": FAIL if first else PASS,
    }


_CONTRACT_GATES = ("coverage", "false_success", "unknown_effects", "floors", "budget", "quality")


def _json(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value


def _ratio(ratio) -> dict[str, Any]:
    return {
        "num": ratio.num,
        "den": ratio.den,
        "wilson95": list(ratio.wilson95) if ratio.wilson95 else None,
    }


def _gate_snapshot(result: ContractResult, name: str, limits: Thresholds) -> dict[str, Any]:
    """One contract gate with the numbers it read and the threshold it applied."""
    t = result.totals
    gate = next((g for g in result.gates if g.name == name), None)
    snapshot = {"name": name, "label": GATE_LABELS[name]}
    value: dict[str, Any]
    threshold: dict[str, Any]
    if name == "coverage":
        value = {
            "completions_without_outcome": t.completions_without_outcome,
            "effects_without_state": t.effects_without_state,
            "estimated_cost_trials": t.estimated_runs,
            "missing_cost_trials": t.missing_cost_runs,
            "unpriced_judge_calls": t.unpriced_judge_calls,
        }
        threshold = {"required": limits.coverage_required}
    elif name == "false_success":
        value = {
            **_ratio(result.false_success),
            "unverified_completions": result.unverified_completions,
        }
        threshold = {"max": limits.max_false_successes}
    elif name == "unknown_effects":
        value = {"count": t.effects_unknown, "intentionally_denied": t.effects_denied}
        threshold = {"max": limits.max_unknown_effects}
    elif name == "floors":
        parts = dict(gate.parts) if gate is not None else {}
        value = {
            "useful_progress": {
                **_ratio(result.useful_progress),
                "status": parts["useful_progress"],
                "excluded_wait_windows": result.excluded_wait_windows,
                "stalled_wait_windows": result.stalled_wait_windows,
                "stale_collector_windows": result.stale_collector_windows,
            },
            "tool_effect_integrity": {
                **_ratio(result.tool_effect_integrity),
                "status": parts["tool_effect_integrity"],
                "intentionally_denied": result.intentionally_denied,
            },
        }
        threshold = {
            "min_useful_progress": _json(limits.min_useful_progress),
            "min_tool_effect_integrity": _json(limits.min_tool_effect_integrity),
        }
    elif name == "budget":
        value = {
            "cost_per_verified_outcome_usd": _json(result.cost_per_verified_outcome_usd),
            "verified_outcomes": result.verified_outcomes,
            "covered_usd": _json(result.billed_usd),
            "cost_per_run_usd": _json(result.cost_per_run_usd),
            "estimated_usd": _json(result.estimated_usd),
        }
        threshold = {"max": _json(limits.max_cost_per_verified_outcome_usd)}
    else:  # quality
        value = {"mean": _json(result.quality_mean), "graded": result.graded}
        threshold = {"min": _json(limits.min_quality)}
        if gate is None:
            gate_status, detail = NOT_APPLICABLE, "no quality floor set (quality is optimised)"
            return {
                **snapshot,
                "status": gate_status,
                "detail": detail,
                "value": value,
                "threshold": threshold,
            }
    assert gate is not None  # every gate but an unset quality floor is evaluated
    return {
        **snapshot,
        "status": gate.status,
        "detail": gate.detail,
        "value": value,
        "threshold": threshold,
    }


def _checks_scored_gate(runs: list) -> dict[str, Any]:
    """Fail closed on what could not be scored (DESIGN section 10.5). A case's pass does not
    count skipped or errored checks against it (section 5), so a run whose judge was down, or
    whose agent crashed on every trial, can show a perfect case pass rate; the release must not
    rest on that. A check disabled for a case by an override is not blocking there, and does not
    count. From the runs' stored figures (`evaluations.figures`); for runs without, one query for
    the check results and one for the trials, whatever the run size."""
    from evaluations.choices import TrialStatus
    from evaluations.figures import stored_checks, stored_trials_error
    from evaluations.models import Trial

    run_ids = [run.pk for run in runs]
    unscored = unscored_blocking(runs)
    failed_trials, live = {}, []
    for run in runs:
        if stored_checks(run) is None:
            live.append(run.pk)
        else:
            failed_trials[run.pk] = stored_trials_error(run)
    if live:
        failed_trials.update(
            Trial.objects.filter(run_id__in=live, status=TrialStatus.ERROR)
            .values_list("run_id")
            .annotate(n=Count("pk"))
        )
    per_run = [
        {
            "run": pk,
            "unscored_blocking": unscored.get(pk, 0),
            "trials_error": failed_trials.get(pk, 0),
        }
        for pk in run_ids
    ]
    bad = [r for r in per_run if r["unscored_blocking"] or r["trials_error"]]
    if not runs:
        status, detail = FAIL, "no gate run"
    elif bad:
        status = FAIL
        detail = "; ".join(
            f"run #{r['run']}: {r['unscored_blocking']} blocking check result(s) not scored, "
            f"{r['trials_error']} trial(s) in error"
            for r in bad
        )
    else:
        status, detail = PASS, "every blocking check was scored in every trial"
    return {
        "name": "checks_scored",
        "label": "blocking checks scored",
        "status": status,
        "detail": detail,
        "value": {"runs": per_run},
        "threshold": {"max_unscored_blocking": 0, "max_trials_error": 0},
    }


def _case_pass_rate_gate(runs: list, minimum: float) -> dict[str, Any]:
    """The policy's ``min_case_pass_rate``: every gate run must reach it; a run without a rate
    (not completed, or no cases) fails closed."""
    rates = [(run.pk, (run.summary or {}).get("case_pass_rate")) for run in runs]
    missing = [pk for pk, rate in rates if rate is None]
    low = [(pk, rate) for pk, rate in rates if rate is not None and rate < minimum]
    if not runs or missing:
        status = FAIL
        detail = (
            "no gate run"
            if not runs
            else (f"no case pass rate for run(s) {', '.join(f'#{pk}' for pk in missing)}")
        )
    elif low:
        status = FAIL
        detail = "; ".join(f"run #{pk}: {rate:.3f} < {minimum}" for pk, rate in low)
    else:
        status = PASS
        detail = "; ".join(f"run #{pk}: {rate:.3f} >= {minimum}" for pk, rate in rates)
    return {
        "name": "case_pass_rate",
        "label": "case pass rate",
        "status": status,
        "detail": detail,
        "value": {"runs": [{"run": pk, "rate": rate} for pk, rate in rates]},
        "threshold": {"min": minimum},
    }


def unscored_blocking(runs) -> dict[int, int]:
    """``{run pk: its blocking check results skipped or in error}`` (DESIGN section 10.5): from
    the runs' stored figures, and in one grouped query for the runs without (finished before
    figures were stored, or not finished). The checks-scored gate and the runs list's verdicts
    both count them so."""
    from evaluations.figures import stored_checks
    from evaluations.models import CheckResult

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
