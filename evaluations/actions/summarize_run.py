"""SummarizeRun: the judge's short summary of a finished run, every statement citing its cases.

The facts handed to the judge are the run's own: its failed check results grouped by check and
reason (with the case keys), its worst cases (fewest repetitions passed, lowest mean score) and,
when there is one, what changed against the previous completed run of the same agent and
dataset (cases that now fail or now pass). The judge answers `rubrics.RUN_SUMMARY` (a strict
schema). Every statement must cite at least one case key, and every key it cites must be a case
of the run: checked after the answer, as custom checks verify their quotes against the output.
A statement citing an unknown key (or none) is dropped and kept under `dropped`; when nothing
is left the summary is refused and nothing is stored. The judge's calls are recorded as usual
and their cost lines re-kinded `summary`, so `/costs/` shows them under that kind.
"""

import json
from typing import Any

from django.db import transaction
from django.db.models import Avg
from django.utils import timezone

from evaluations.checks.rubrics import RUN_SUMMARY
from evaluations.choices import CaseStatus, CheckStatus, CostKind, RunStatus
from evaluations.costs.ledger import rekind_cost_lines
from evaluations.judge.client import get_default_judge
from evaluations.models import CaseResult, CheckResult, CostEntry, Run
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.permissions import user_can

WORST = 5
PER_REASON = 10


def summary_unavailable(run):
    """Why the run cannot be summarised now (None: it can): the button shows it."""
    return run.summary_unavailable


def previous_run(run):
    return (
        Run.objects.filter(
            agent_version__agent_id=run.agent_version.agent_id,
            dataset_version__dataset_id=run.dataset_version.dataset_id,
            status=RunStatus.COMPLETED,
            created_at__lt=run.created_at,
        )
        .order_by("-created_at", "-pk")
        .first()
    )


def run_facts(run):
    """The facts the judge summarises, and the case keys of the run (what may be cited)."""
    results = {r.case.key: r for r in CaseResult.objects.filter(run=run).select_related("case")}
    failures: dict[Any, Any] = {}
    failed = (
        CheckResult.objects.filter(trial__run=run, status=CheckStatus.FAILED)
        .values_list("check_config__label", "reason", "trial__case__key")
        .order_by("check_config__label", "reason", "trial__case__key")
    )
    for label, reason, key in failed:
        keys = failures.setdefault((label, reason), [])
        if key not in keys and len(keys) < PER_REASON:
            keys.append(key)
    means = dict(
        CheckResult.objects.filter(trial__run=run, score__isnull=False)
        .values("trial__case__key")
        .annotate(mean=Avg("score"))
        .values_list("trial__case__key", "mean")
    )
    worst = sorted(
        (r for r in results.values() if r.status in (CaseStatus.FAILED, CaseStatus.FLAKY)),
        key=lambda r: (r.repetitions_passed, means.get(r.case.key, 1.0), r.case.key),
    )[:WORST]
    facts = {
        "run": run.pk,
        "agent": f"{run.agent_version}",
        "dataset": f"{run.dataset_version}",
        "cases": len(results),
        "cases_passed": sum(r.passed for r in results.values()),
        # Cases with no verdict are neither passed nor failed: the summary names them apart.
        "cases_unscored": {
            r.case.key: r.reason for r in results.values() if r.status == CaseStatus.UNSCORED
        },
        "failures": [
            {"check": label, "reason": reason, "cases": keys}
            for (label, reason), keys in failures.items()
        ],
        "worst": [
            {
                "case": r.case.key,
                "repetitions_passed": r.repetitions_passed,
                "repetitions": r.repetitions,
                "mean_score": means.get(r.case.key),
                "flaky": r.flaky,
            }
            for r in worst
        ],
    }
    before = previous_run(run)
    if before is not None:
        earlier = dict(CaseResult.objects.filter(run=before).values_list("case__key", "status"))
        failing = (CaseStatus.FAILED, CaseStatus.FLAKY)
        facts["previous_run"] = {
            "run": before.pk,
            "agent": f"{before.agent_version}",
            "now_failing": sorted(
                k
                for k, r in results.items()
                if r.status in failing and earlier.get(k) == CaseStatus.PASSED
            ),
            "now_passing": sorted(
                k for k, r in results.items() if r.passed and earlier.get(k) in failing
            ),
        }
    return facts, set(results)


def verified(statements, keys):
    """(kept, dropped): a statement is kept when it cites cases and every one is in `keys`."""
    kept: list[Any] = []
    dropped: list[Any] = []
    for statement in statements:
        cited = statement.get("cases") or []
        (kept if cited and set(cited) <= keys else dropped).append(statement)
    return kept, dropped


class SummarizeRun(Action):
    """Who may start the agent's runs (a Builder of it) or edit the dataset (an Editor) may ask
    for a summary: it spends judge calls."""

    noun = "run"
    verb = "summarize"

    def __init__(self, *, acting_user, run):
        super().__init__(acting_user=acting_user)
        self.run = run

    def check(self):
        run, user = self.run, self.acting_user
        if user is not None and not (
            user_can(user, "build", run.agent_version.agent)
            or user_can(user, "edit", run.dataset_version.dataset)
        ):
            raise ActionDenied("You may not summarise this run (Builder or Editor role needed).")
        why = summary_unavailable(run)
        if why:
            raise ActionConflict(why)

    def execute_in_transaction(self):
        """The judge is asked outside any transaction, so its calls and their cost stay
        recorded even when the summary is then refused; the summary and its audit entry are
        stored together."""
        self.check()
        self.answer, self.facts, self.keys = self.ask()
        with transaction.atomic():
            return self.perform()

    def ask(self):
        run = self.run
        facts, keys = run_facts(run)
        judge = get_default_judge(run=run.pk, agent=run.agent_version.agent_id)
        if judge is None:  # unset since the check: nothing to ask
            raise ActionConflict("No judge is configured (SHERLOCK_JUDGE_BASE_URL).")
        answer = judge.ask(RUN_SUMMARY, {"facts": json.dumps(facts, indent=1)}, cache=False)
        rekind_cost_lines(
            CostEntry.objects.filter(judge_call_id__in=answer.call_ids), CostKind.SUMMARY
        )
        return answer, facts, keys

    def perform(self):
        run, answer, facts = self.run, self.answer, self.facts
        if not answer.ok:
            raise ActionConflict(f"The judge gave no summary: {answer.error}")
        kept, dropped = verified(answer.data["statements"], self.keys)
        if not kept:
            raise ActionConflict(
                "The judge's summary cited no case of this run in any statement; nothing stored."
            )
        run.judge_summary = {
            "statements": kept,
            "dropped": dropped,
            "model": answer.model,
            "previous_run": (facts.get("previous_run") or {}).get("run"),
            "judge_call_ids": answer.call_ids,
            "created_at": timezone.now().isoformat(),
        }
        run.save(update_fields=["judge_summary"])
        self.audit(
            target=run,
            after={"statements": len(kept), "dropped": len(dropped)},
        )
        return run
