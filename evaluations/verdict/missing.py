"""What evidence a run lacks (outcome verification, a judge, a quality grader, billing), each
with what to do and where it is documented.
"""

from __future__ import annotations

from evaluations.checks.scoring import JUDGE_UNAVAILABLE
from evaluations.choices import (
    CheckStatus,
)
from evaluations.contract import (
    ContractResult,
    Thresholds,
)
from evaluations.judge.probe import shown_url
from evaluations.judge.setup import judge_configured, judge_named, no_judge_sentence
from evaluations.verdict.cases import Evidence
from evaluations.verdict.fixes import report_cost_fix
from evaluations.verdict.model import Missing, doc_url


def missing_evidence(
    contract: ContractResult,
    limits: Thresholds,
    runs: list,
    evidence: Evidence,
    errored_cost: tuple[int, int] = (0, 0),
):

    found = []
    t = contract.totals
    unverified = t.unverified_completions
    if unverified:
        required = limits.requires_verified_outcomes
        found.append(
            Missing(
                "outcome_verification",
                f"{unverified} of {t.declared_complete} declared completions have no verified "
                "outcome: false success and cost per verified outcome cannot be measured"
                + (" (the policy requires verified outcomes)" if required else ""),
                "Add an outcome verifier (outcome_check) to the dataset's cases"
                + (
                    ", or an Admin turns off «requires verified outcomes» in the policy"
                    if required
                    else "; the policy does not require one (setting «requires verified "
                    "outcomes» off)"
                ),
                doc_url("contract", "A dataset without outcome verifiers"),
                fails=required,
            )
        )
    groups = [g for run in runs for g in evidence.unscored.get(run.pk, [])]
    judged_skips = sum(g["n"] for g in groups if "judge" in (g.get("reason") or ""))
    if judged_skips and not judge_configured():
        found.append(
            Missing(
                "judge",
                f"{judged_skips} blocking model check result(s) skipped: no judge is configured",
                no_judge_sentence(),
                doc_url("judges"),
                fails=True,
            )
        )
    judge_errors = [
        g
        for g in groups
        if g["status"] == CheckStatus.ERROR
        and (g.get("reason") or "").startswith(JUDGE_UNAVAILABLE)
    ]
    if judge_errors and judge_configured():
        cause = judge_errors[0]["reason"][len(JUDGE_UNAVAILABLE) :].lstrip(": ")
        found.append(
            Missing(
                "judge_unavailable",
                f"{sum(g['n'] for g in judge_errors)} blocking model check result(s) not "
                f"scored: {judge_named()} did not answer ({cause})",
                f"Make {judge_named()} answer (`manage.py check_judge` names what to change), "
                "then run again",
                doc_url("judges"),
                fails=True,
            )
        )
    errored = [evidence.errored[run.pk] for run in runs if run.pk in evidence.errored]
    if errored:
        versions = {run.agent_version_id: run.agent_version for run in runs}
        where = "; ".join(agent_where(version) for version in versions.values())
        found.append(
            Missing(
                "agent",
                f"{sum(row['trials'] for row in errored)} trial(s) in error: the agent "
                f"({where}) did not answer: {(errored[0]['error'] or 'no error recorded')[:300]}",
                "Make the agent answer (its endpoint or its code), then run again",
                doc_url("adapters"),
                fails=True,
            )
        )
    if limits.min_quality is not None and not contract.graded:
        found.append(
            Missing(
                "quality_grader",
                "the policy sets a quality floor and no trial was graded",
                "Mark one check of the dataset version as its quality grader",
                doc_url("contract", "Task quality: the quality grader"),
                fails=True,
            )
        )
    # A trial in error has no cost because it has no evidence at all: what adds it is fixing
    # the error (the checks-scored gate names those trials), not billing.
    missing_cost = t.missing_cost_runs - errored_cost[0]
    estimated_cost = t.estimated_runs - errored_cost[1]
    if missing_cost or estimated_cost:
        found.append(
            Missing(
                "billing",
                f"{missing_cost} trial(s) with missing cost, {estimated_cost} with estimated cost",
                report_cost_fix(runs),
                doc_url("contract", "Cost"),
                fails=limits.coverage_required,
            )
        )
    return found


def agent_where(version) -> str:
    """Where ``version``'s agent answers, in words: its adapter and its URL or callable (a URL
    shown without any user:password)."""

    config = version.config or {}
    target = config.get("url") or config.get("base_url")
    if isinstance(target, str) and target:
        return f"{version.adapter} at {shown_url(target)}"
    if isinstance(config.get("callable"), str):
        return f"{version.adapter} {config['callable']}"
    return str(version.adapter)
