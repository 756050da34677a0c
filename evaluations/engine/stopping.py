"""Stopping a run early once its gates are decided (docs/contract.md, "Stopping early").

A run started with `stop_early` has a seed, and its trials were created in the seed's case
order, so the workers take its cases in about that order. While it runs, a shard asks
`maybe_stop_early` every `SHERLOCK_STOP_EARLY_SECONDS` (after every trial in the tests' sync
mode): the cases finished so far, in seed order, are read by the gates of the policy in force
(evaluations.verdict.sequential: the case pass rate, and no regression against the live
version when the policy has a margin and a completed live run pairs). Once one gate fails, or
every one is decided, the run's pending trials are cancelled (those already running finish)
and what the gates read is kept in `Run.sequential`; the last trial finishing completes the
run as usual. The verdict reads the finished run again by the same rule.
"""

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from evaluations.choices import TRIAL_FINISHED, RunStatus, TrialStatus
from evaluations.contract import applied_thresholds
from evaluations.engine.completion import case_state_of, repetitions_by_case
from evaluations.models import CaseVersion, Run, Trial
from evaluations.stats import INSUFFICIENT
from evaluations.stats.decide import FAIL
from evaluations.verdict.paired import case_outcomes, live_runs
from evaluations.verdict.sequential import Decided, decide_pairs, decide_rate, steps_of
from sherlock.core.audit import audit

log = logging.getLogger("sherlock.engine")


def maybe_stop_early(run_id) -> bool:
    """Stop the run if it stops early and its gates are decided; True when this call stopped
    it. Four queries while undecided."""
    run = (
        Run.objects.select_related("agent_version__agent")
        .filter(pk=run_id, stop_early=True, status=RunStatus.RUNNING)
        .first()
    )
    if run is None or run.sequential or run.seed is None:
        return False
    decided = gates_so_far(run)
    if not should_stop(decided):
        return False
    return _stop(run, decided)


def gates_so_far(run) -> dict[str, Decided | None]:
    """The gates over the cases finished so far, in seed order: ``case_pass_rate`` and, under a
    margin, ``regression`` (None: no live run is complete to pair with yet)."""
    applied = applied_thresholds([run.agent_version.agent])[run.agent_version.agent_id]
    keys = dict(
        CaseVersion.objects.filter(dataset_version_id=run.dataset_version_id).values_list(
            "case_id", "case__key"
        )
    )
    unfinished = set(
        Trial.objects.filter(run=run)
        .exclude(status__in=TRIAL_FINISHED)
        .values_list("case_id", flat=True)
        .distinct()
    )
    statuses: dict[int, str | None] = {
        row[0]: case_state_of(row)[0] for row in repetitions_by_case(run) if row[1]
    }
    for case_id in unfinished:
        statuses[case_id] = None
    steps = steps_of(keys, statuses, run.seed)
    decided: dict[str, Decided | None] = {
        "case_pass_rate": decide_rate(
            steps,
            applied.min_case_pass_rate,
            applied.case_pass_rate_decides_on,
            applied.case_pass_rate_confidence,
        )
    }
    if applied.max_regression is not None and run.pk in (pairs := live_runs([run])):
        live = pairs[run.pk]
        decided["regression"] = (
            decide_pairs(
                steps,
                case_outcomes([live.pk])[live.pk],
                applied.max_regression,
                applied.case_pass_rate_confidence,
            )
            if live is not None
            else None
        )
    return decided


def should_stop(decided: dict[str, Decided | None]) -> bool:
    """Stop once a gate fails (the release fails whatever the rest says), or every gate is
    decided."""
    states = [found.decision if found else INSUFFICIENT for found in decided.values()]
    return FAIL in states or INSUFFICIENT not in states


def _stop(run, decided) -> bool:
    now = timezone.now()
    record: dict[str, Any] = {
        "stopped_at": now.isoformat(),
        "gates": {
            name: None
            if found is None
            else {
                "decision": found.decision,
                "after_cases": found.at,
                "cases": found.cases,
                "with_verdict": found.judged,
            }
            for name, found in decided.items()
        },
    }
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.sequential or locked.status != RunStatus.RUNNING:
            return False  # another shard stopped it, or it was cancelled meanwhile
        cancelled = Trial.objects.filter(run=run, status=TrialStatus.PENDING).update(
            status=TrialStatus.CANCELLED, finished_at=now
        )
        record["trials_not_run"] = cancelled
        Run.objects.filter(pk=run.pk).update(sequential=record)
        run.sequential = record
        audit(
            "evaluations.run.stop_early",
            actor=None,
            target=run,
            before={"trials_pending": cancelled},
            after=record,
            reason="every gate was decided" if not _failed(decided) else "a gate failed",
        )
    log.info("run %s stopped early: %s trials not run", run.pk, cancelled)
    return True


def _failed(decided) -> bool:
    return any(found is not None and found.decision == FAIL for found in decided.values())
