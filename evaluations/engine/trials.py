"""One trial: claim it, call the agent, score every check, collect the evidence.

`execute_trial` claims a pending trial by compare-and-set with a lease (`claim_trial`), calls
the shard's prepared agent, scores the run's checks (`score_trial`) with the engine's judge,
whose calls are held with the trial (`evaluations.engine.judging`), and runs the evidence step.
Nothing is written here: it returns a `Finished`, everything the trial's write needs, computed
without the database (`finished_trial`, with its costs from `evaluations.costs`), which the
writer stores (`evaluations.engine.writer`). An async shard claims in batches instead
(`claim_trials`), renews the leases of the trials it holds (`renew_leases`), and runs each
claimed trial with `execute_claimed` on its loop, where the agent's call and the checks' judge
questions are awaited (`acomplete_trial`); the blocking path ends in `complete_trial`, the same
flow with the judge's blocking `ask`.
"""

import copy
import logging
import os
import socket
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from agents.adapters import AgentCallError
from agents.adapters import client as client_adapter
from evaluations import checks as check_library
from evaluations.checks import scoring
from evaluations.choices import CheckStatus, TrialStatus
from evaluations.costs.ledger import agent_cost_line, judge_cost_lines
from evaluations.costs.prices import agent_cost, price_judge_calls
from evaluations.engine import database
from evaluations.engine.judging import CheckJudge, ledger
from evaluations.models import CheckResult, Trial
from sherlock.core.aio import run_unsuspended

log = logging.getLogger("sherlock.engine")


def worker_name():
    """host:pid of this process; read per call, since django-q2 forks workers after import."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _claim_fields(now, attempts):
    return {
        "status": TrialStatus.RUNNING,
        "lease_expires_at": now + timedelta(seconds=settings.SHERLOCK_TRIAL_LEASE_SECONDS),
        "attempts": attempts,
        "worker": worker_name(),
        "started_at": now,
    }


def claim_trial(trial):
    """Compare-and-set the trial from `pending` to `running` with a fresh lease.

    Returns the attempt number, or None when someone else claimed it since we loaded it, or it
    was cancelled. One UPDATE, no read. Only `pending` is claimable: a trial whose worker died
    goes back to `pending` through the reaper alone, which also decides that a dead worker's
    trial in a cancelled run is cancelled, so claiming never has to look at the run.
    """
    claim = _claim_fields(timezone.now(), trial.attempts + 1)
    claimed = Trial.objects.filter(
        pk=trial.pk, status=TrialStatus.PENDING, attempts=trial.attempts
    ).update(**claim)
    if claimed != 1:
        return None
    for name, value in claim.items():  # the instance now says what the row says
        setattr(trial, name, value)
    return trial.attempts


def claim_trials(trials):
    """`claim_trial` for a batch: one UPDATE for them all, each guarded as there by its status
    and attempt number; returns the (trial, attempt) pairs this worker now holds.

    The rows the UPDATE moved are read back by what the claim wrote (this worker, this claim's
    start time, the next attempt number): an UPDATE says only how many rows it changed, and
    the attempt number alone cannot tell our claim from one that took the row before us.
    """
    if not trials:
        return []
    now = timezone.now()
    guard = Q()
    for trial in trials:
        guard |= Q(pk=trial.pk, attempts=trial.attempts)
    claim = _claim_fields(now, F("attempts") + 1)
    if not Trial.objects.filter(guard, status=TrialStatus.PENDING).update(**claim):
        return []
    held = dict(
        Trial.objects.filter(
            pk__in=[trial.pk for trial in trials],
            status=TrialStatus.RUNNING,
            worker=claim["worker"],
            started_at=now,
        ).values_list("pk", "attempts")
    )
    claimed = []
    for trial in trials:
        if held.get(trial.pk) == trial.attempts + 1:
            for name, value in claim.items():
                setattr(trial, name, value)
            trial.attempts = held[trial.pk]
            claimed.append((trial, trial.attempts))
    return claimed


def renew_leases(held):
    """Extend the lease of every claim this worker still holds, with one UPDATE for them all;
    returns the ids of the trials whose lease it extended.

    `held` maps trial ids to the attempt of this worker's claim. Each row is guarded by that
    attempt and by `running`, as the writer's update is: a trial the reaper handed back, or
    that another worker claimed since (a later attempt), or that was written, is left alone,
    so a worker never extends a lease that is not its own. The guard is one `IN` list per
    attempt number (at most `MAX_ATTEMPTS` of them), so the statement stays small however many
    trials are held. When fewer rows moved than were asked for, the ones that did are read back
    (a second statement): the caller stops renewing the others.
    """
    if not held:
        return set()
    by_attempt: dict[Any, Any] = {}
    for pk, attempt in held.items():
        by_attempt.setdefault(attempt, []).append(pk)
    guard = Q()
    for attempt, pks in by_attempt.items():
        guard |= Q(attempts=attempt, pk__in=pks)
    mine = Trial.objects.filter(guard, status=TrialStatus.RUNNING)
    lease = timezone.now() + timedelta(seconds=settings.SHERLOCK_TRIAL_LEASE_SECONDS)
    if mine.update(lease_expires_at=lease) == len(held):
        return set(held)
    return set(mine.values_list("pk", flat=True))


def execute_trial(shard, trial):
    """Claim, run and score one trial of `shard` (an `evaluations.engine.shards.Shard`);
    returns what it produced, ready to be written (a `Finished`), or None when the trial could
    not be claimed. The blocking path: the tests' sync mode (a shard inside a transaction)."""
    attempt = claim_trial(trial)
    if attempt is None:
        return None
    transcript, error = None, shard.agent_error
    if shard.uploaded:
        transcript, error = uploaded_answer(trial)
    elif shard.agent is not None:
        try:
            transcript = shard.agent.call(trial.case_version.as_check_input(), **_call(trial))
        except AgentCallError as exc:
            error = str(exc)
    return complete_trial(shard, trial, attempt, transcript, error)


async def execute_claimed(shard, trial, attempt):
    """`execute_trial` for a trial already claimed, on the shard's loop: the agent's call is
    awaited there (`PreparedAgent.acall`), and so are the checks' judge questions
    (`acomplete_trial`); their database work goes through the shard's few connections."""
    transcript, error = None, shard.agent_error
    if shard.uploaded:
        transcript, error = uploaded_answer(trial)
    elif shard.agent is not None:
        try:
            case = trial.case_version.as_check_input()
            transcript = await shard.agent.acall(case, **_call(trial))
        except AgentCallError as exc:
            error = str(exc)
    return await acomplete_trial(shard, trial, attempt, transcript, error)


def _call(trial):
    return {"repetition": trial.repetition}


def uploaded_answer(trial):
    """A client run's trial (docs/client.md): the agent's answer is what the client uploaded,
    a transcript or the error its function met; `(transcript, error)` as an agent call gives
    them. A trial nothing was uploaded for is an agent error, never silently missing (finishing
    the run records that, `agents.adapters.client.NEVER_RETURNED`; this is the last guard)."""
    if trial.uploaded_at is None:
        return None, trial.error or client_adapter.NEVER_RETURNED
    if trial.error:
        return None, trial.error
    return copy.deepcopy(trial.transcript), ""


def complete_trial(shard, trial, attempt, transcript, error):
    """Score a claimed trial's checks on the agent's answer (None: the call failed with
    `error`) and collect its evidence; returns its `Finished`. Blocks: the judge's `ask`."""
    return run_unsuspended(_complete(shard, trial, attempt, transcript, error, on_loop=False))


async def acomplete_trial(shard, trial, attempt, transcript, error):
    """`complete_trial` on the shard's loop: the model checks' questions are awaited
    (`JudgeClient.aask`), so the judging of every trial in flight overlaps on the loop with no
    thread each, and the evidence step is awaited on the shard's database threads."""
    return await _complete(shard, trial, attempt, transcript, error, on_loop=True)


async def _complete(shard, trial, attempt, transcript, error, *, on_loop):
    # One flow for both: `on_loop` awaits the judge and the database, otherwise they block
    # and this coroutine never suspends (`sherlock.core.aio.run_unsuspended`).
    run = shard.run
    judge_calls: list[Any] = []
    held = ledger.set(judge_calls)  # this context's trial: concurrent trials keep their own
    try:
        trial.error = error
        judge = None
        if shard.judge is not None:
            judge = shard.judge.bind(run=run, trial=trial, agent=run.agent_version.agent_id)
        evaluate = check_library.aevaluate if on_loop else _evaluate_blocking
        results = await _score(trial, transcript, shard.checks, judge, shard.uncalibrated, evaluate)
        evidence = {}
        if shard.collect_evidence is not None:
            try:
                # It reads the tools the agent called: a statement, on the engine's connections.
                if on_loop:
                    found = await database.arun(shard.collect_evidence, trial, transcript)
                else:
                    found = database.call(shard.collect_evidence, trial, transcript)
                evidence = _trial_fields(found)
            except Exception as exc:  # the trial's results stand; the gap shows as no evidence
                log.exception("collecting evidence failed on trial %s", trial.pk)
                trial.error = f"collecting evidence failed: {type(exc).__name__}: {exc}"
    finally:
        ledger.reset(held)
    return finished_trial(shard, trial, attempt, transcript, results, judge_calls, evidence)


def score_trial(trial, transcript, checks, judge, uncalibrated=None):
    """Score every check of the run on one trial; returns unsaved CheckResult objects.

    A check that requires calibration and is not calibrated yet is scored as informative, with
    the reason appended (evaluations.reads.calibration). Blocks on the judge (`ascore_trial`
    awaits).
    """
    return run_unsuspended(
        _score(trial, transcript, checks, judge, uncalibrated, _evaluate_blocking)
    )


async def ascore_trial(trial, transcript, checks, judge, uncalibrated=None):
    """`score_trial` on an event loop: each model check's questions awaited (`judge.aask`)."""
    return await _score(trial, transcript, checks, judge, uncalibrated, check_library.aevaluate)


async def _evaluate_blocking(kind, params, case, transcript, judge=None):
    return check_library.evaluate(kind, params, case, transcript, judge=judge)


async def _score(trial, transcript, checks, judge, uncalibrated, evaluate):
    scored = await _score_checks(
        trial.case_version.as_check_input(),
        trial.case_version.overrides,
        transcript,
        checks,
        judge,
        uncalibrated,
        evaluate,
        error=trial.error,
    )
    results = []
    for item in scored:
        result = CheckResult(
            trial=trial,
            check_config=item.check,
            score=item.score,
            status=item.status,
            blocking=item.blocking,
            threshold=item.threshold,
            reason=item.reason,
            evidence=item.evidence,
        )
        # The JudgeCall instances it rests on; their ids go in `judge_call_ids` once written.
        result.calls = item.calls
        results.append(result)
    return results


@dataclass
class ScoredCheck:
    """One check's result on one transcript, before it is stored: a run's `CheckResult` or a
    production trace's score (`production.online`) are made from it."""

    check: object
    score: float | None
    status: str
    blocking: bool
    threshold: float | None
    reason: str
    evidence: dict
    calls: list


def score_transcript(case, transcript, checks, judge, *, overrides=None, uncalibrated=None):
    """Score `checks` on one transcript for one case input (`CaseVersion.as_check_input()`
    shape), exactly as a run's trial is scored: the same effective checks (overrides), the
    same statuses, the same calibration rule; returns `ScoredCheck`s. A check only needs
    `label`, `kind`, `params`, `threshold`, `mode` and `judge_model`. Blocks on the judge.
    Production traces are scored through this (`production.online`), never a second scorer."""
    return run_unsuspended(
        _score_checks(case, overrides, transcript, checks, judge, uncalibrated, _evaluate_blocking)
    )


async def _score_checks(
    case_input, overrides, transcript, checks, judge, uncalibrated, evaluate, *, error=None
):
    # In order: a check may reuse an earlier one's judge failure within the trial
    # (`JudgeClient.bind`), and the RAG checks share the claim extraction through the cache.
    uncalibrated = uncalibrated or {}
    results = []
    for check in checks:
        eff = scoring.effective_check(check, overrides)
        calls = []
        if eff.disabled:
            evidence: dict[str, Any]
            score, outcome, reason, evidence = (
                None,
                CheckStatus.SKIPPED,
                "disabled for this case by an override",
                {},
            )
        elif transcript is None:
            score, outcome, reason, evidence = (
                None,
                CheckStatus.ERROR,
                f"the agent call failed: {error}",
                {},
            )
        else:
            check_judge = CheckJudge(judge, check.judge_model or None) if judge else None
            verdict = await evaluate(
                eff.kind, eff.params, case_input, transcript, judge=check_judge
            )
            score, outcome = verdict.score, verdict.outcome
            reason, evidence, calls = verdict.reason, verdict.evidence, verdict.judge_calls
        status = scoring.check_status(score, outcome, eff.threshold)
        blocking = eff.blocking
        reason = reason or ""
        if blocking and check.label in uncalibrated:
            blocking = False
            gate = uncalibrated[check.label]
            reason = f"{reason} ({gate})" if reason else gate
        results.append(
            ScoredCheck(
                check=check,
                score=score if status != CheckStatus.ERROR else None,
                status=status,
                blocking=blocking,
                threshold=eff.threshold,
                reason=reason,
                evidence=evidence or {},
                calls=[c for c in calls or [] if c is not None],
            )
        )
    return results


# Fields the engine owns; evidence may not overwrite them.
_ENGINE_FIELDS = {
    "id",
    "run",
    "case",
    "case_version",
    "repetition",
    "status",
    "lease_expires_at",
    "attempts",
    "worker",
    "transcript",
    "error",
    "started_at",
    "finished_at",
    "cost_usd",
    "billing_coverage",
}


def _trial_fields(values):
    fields = {f.name for f in Trial._meta.concrete_fields} - _ENGINE_FIELDS
    unknown = set(values or {}) - fields
    if unknown:
        log.warning("collect_evidence returned fields the trial does not have: %s", unknown)
    return {name: value for name, value in (values or {}).items() if name in fields}


@dataclass
class Finished:
    """A trial that ran: its row's new values, its check results, judge calls and cost lines
    (unsaved), and what it adds to the run's progress counters."""

    trial: Trial
    attempt: int
    fields: dict
    results: list
    judge_calls: list
    costs: list
    counters: dict


def finished_trial(shard, trial, attempt, transcript, results, judge_calls, evidence):
    """Everything a trial's write needs, computed without the database: the trial row's new
    values, its priced judge calls and cost lines, and its share of the run's counters."""
    run = shard.run
    now = timezone.now()
    called = shard.agent is not None  # no agent call when the version could not be prepared
    usage = (transcript or {}).get("usage") or {}
    model = (transcript or {}).get("model") or (shard.agent.model if called else None) or ""
    usd, coverage = agent_cost(transcript, model, shard.prices)
    fields = {
        "status": TrialStatus.COMPLETED if transcript is not None else TrialStatus.ERROR,
        "finished_at": now,
        "lease_expires_at": None,
        "error": trial.error,
        "cost_usd": usd,
        "billing_coverage": coverage,
    }
    if transcript is not None:
        fields.update(
            transcript=transcript,
            latency_ms=transcript.get("latency_ms"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            declared_complete=transcript.get("declared_complete"),
        )
    fields.update(evidence)
    judge_usd = price_judge_calls(judge_calls, shard.prices)
    line = {
        "day": timezone.localdate(now),
        "agent_id": run.agent_version.agent_id,
        "run_id": run.pk,
        "trial_id": trial.pk,
    }
    cost_lines = judge_cost_lines(judge_calls, **line)
    if called:
        cost_lines.append(
            agent_cost_line(
                model=model,
                prompt_tokens=fields.get("prompt_tokens", 0),
                completion_tokens=fields.get("completion_tokens", 0),
                usd=usd,
                **line,
            )
        )
    counters = {
        "trials_done": 1,
        "trials_error": int(transcript is None),
        "spend_usd": (usd or Decimal(0)) + judge_usd,
        "judge_spend_usd": judge_usd,
        "unpriced_calls": sum(1 for cost in cost_lines if cost.usd is None),
    }
    return Finished(trial, attempt, fields, results, judge_calls, cost_lines, counters)
