"""A stored run's trials as trial records, the format ``contract`` reads.

The contract asks for "one row per trial" from which every numerator, denominator, exclusion and
unavailable state can be reproduced. ``run_records(run)`` writes exactly what
``evaluations.contract.runs.run_totals`` counts, judged the same way, so that
``manage.py contract`` on the export gives the numbers of ``run_contract``:

- ``outcome``: the stored verdict with the verifier's evidence (null when no state);
- ``quality``: the quality grader's score in millionths, as the aggregate sums it;
- ``cost.usd``: agent cost plus the trial's own judge spend, with the coverage
  ``evaluations.costs.ledger.trial_cost`` gives (an unpriced judge call: ``missing``). Judge spend
  bound to the run but to no trial cannot be placed in a trial record;
  ``evaluations.costs.ledger.unattributed_judge_spend`` reports it so the exporter can say so.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from evaluations.contract.db import GRADER_RAN, SCORE_UNITS, run_variant, score_units
from evaluations.costs.ledger import trial_cost, trials_with_judge_cost
from evaluations.models import CheckResult


def _number(value: Decimal | None) -> float | None:
    # float() of a Decimal with <= 15 significant digits reads back (repr) as the same decimal.
    return None if value is None else float(value)


def trial_id(trial) -> str:
    """The record's id: the imported id for imported trials, else run-case-repetition."""
    imported = (trial.transcript or {}).get("imported") or {}
    return str(imported.get("trial_id") or f"run{trial.run_id}-{trial.case.key}-{trial.repetition}")


def run_records(run) -> Iterator[dict[str, Any]]:
    """One trial record per trial of ``run``, in case and repetition order (a few queries)."""
    grader = run.dataset_version.checks.filter(quality_grader=True).first()
    scores = {}
    if grader is not None:
        # The trials where the grader actually ran, as `run_totals` counts them.
        scores = dict(
            CheckResult.objects.filter(
                trial__run=run, check_config=grader, status__in=GRADER_RAN, score__isnull=False
            ).values_list("trial_id", "score")
        )
    grader_name = f"{grader.label}@{grader.version_hash}" if grader else None
    variant = run_variant(run)
    trials = (
        trials_with_judge_cost(run).select_related("case").order_by("case__key", "repetition", "pk")
    )
    for trial in trials:
        usd, coverage = trial_cost(trial)
        evidence = trial.outcome_evidence or {}
        score = scores.get(trial.pk)
        progress = {"active_windows": 0, "windows_with_evidence_delta": 0, **(trial.progress or {})}
        yield {
            "trial_id": trial_id(trial),
            "variant": variant,
            "task": trial.case.key,
            "declared_complete": bool(trial.declared_complete),
            "outcome": (
                {
                    "verdict": trial.outcome_verdict,
                    "verifier": evidence.get("verifier"),
                    "reason": evidence.get("reason"),
                }
                if trial.outcome_verdict
                else None
            ),
            "quality": {
                "grader_ran": score is not None,
                "score": None if score is None else score_units(score) / SCORE_UNITS,
                "grader": grader_name,
            },
            "progress": progress,
            "wait": trial.wait,
            "tool_effects": trial.tool_effects or [],
            "cost": {"usd": _number(usd), "billing_coverage": coverage},
        }
