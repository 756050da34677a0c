"""Helpers for the tests of stored contracts: runs built from the worked example's trial file
or by hand."""

import itertools
import json
from pathlib import Path

from django.utils import timezone

from evaluations.actions.import_trials import ImportTrials
from evaluations.choices import CheckStatus, RunPurpose, RunStatus, TrialStatus
from evaluations.engine.evidence import contract_counts
from evaluations.models import CheckResult, Run, Trial
from tests.support import factories

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "seed_table_trials.json"

POLICY_THRESHOLDS = {
    "max_false_successes": 0,
    "max_unknown_effects": 0,
    "min_useful_progress": 0.9,
    "min_tool_effect_integrity": 0.95,
    "max_cost_per_verified_outcome_usd": 0.6,
    "min_quality": None,
    "coverage_required": True,
}


def seed_text():
    return FIXTURE.read_text()


def seed_records(variant=None):
    trials = json.loads(seed_text())["trials"]
    return [t for t in trials if variant is None or t["variant"] == variant]


def import_seed_variant(variant, agent_version=None, dataset=None):
    """One variant of the contract's worked example, stored as an external run."""
    agent_version = agent_version or factories.agent_version()
    return ImportTrials(
        acting_user=None,
        agent_version=agent_version,
        text=seed_text(),
        variant=variant,
        dataset=dataset,
    ).execute()


_datasets = itertools.count(1)


def empty_run(
    checks=(), cases=("c1",), status=RunStatus.COMPLETED, summary=None, agent_version=None
):
    """A run with no trials yet, on a fresh dataset version with `checks` (Check field dicts)."""
    version = factories.dataset_version(
        factories.dataset(f"contract-{next(_datasets)}"),
        cases=[(key, f"task {key}", {}) for key in cases],
        checks=checks,
    )
    agent_version = agent_version or factories.agent_version()
    return Run.objects.create(
        agent_version=agent_version,
        dataset_version=version,
        purpose=RunPurpose.ADHOC,
        status=status,
        summary=summary if summary is not None else {"cases": 1, "case_pass_rate": 1.0},
    )


def add_trial(
    run,
    *,
    declared_complete=True,
    outcome_verdict="verified",
    cost_usd="0.10",
    billing_coverage="billed",
    progress=None,
    wait=None,
    tool_effects=None,
    quality=None,
    quality_status=CheckStatus.SCORED,
    case_key="c1",
):
    """Store one trial as the engine would (counts derived by `contract_counts`)."""
    case_version = run.dataset_version.case_versions.get(case__key=case_key)
    repetition = run.trials.filter(case=case_version.case).count() + 1
    progress = progress or {"active_windows": 2, "windows_with_evidence_delta": 2}
    tool_effects = (
        tool_effects
        if tool_effects is not None
        else [{"call": "refunds.create", "state": "verified", "intentionally_denied": False}]
    )
    trial = Trial.objects.create(
        run=run,
        case=case_version.case,
        case_version=case_version,
        repetition=repetition,
        status=TrialStatus.COMPLETED,
        declared_complete=declared_complete,
        outcome_verdict=outcome_verdict,
        cost_usd=cost_usd,
        billing_coverage=billing_coverage,
        progress=progress,
        wait=wait,
        tool_effects=tool_effects,
        finished_at=timezone.now(),
        **contract_counts(progress, wait, tool_effects),
    )
    if quality is not None or quality_status != CheckStatus.SCORED:
        grader = run.dataset_version.checks.get(quality_grader=True)
        CheckResult.objects.create(
            trial=trial, check_config=grader, score=quality, status=quality_status
        )
    return trial


GRADER = {
    "label": "Quality",
    "kind": "custom",
    "params": {"criterion": "good"},
    "mode": "informative",
    "quality_grader": True,
}


def refinish(run):
    """Compute a finished run's case results, summary and figures again, as finishing does.

    A run is finished once and its figures (`evaluations.reads.figures`) are computed then; a test
    that rewrites the stored results of a finished run, to stage a state the engine would have
    reached another way, calls this afterwards."""
    from evaluations.engine import compute_case_results

    summary = compute_case_results(run)
    Run.objects.filter(pk=run.pk).update(summary=summary)
    run.refresh_from_db()
    return run
