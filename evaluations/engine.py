"""The run engine: execute trials, score their checks, finish the run exactly once.

A shard (one django-q2 task) takes trial ids and loads what every trial shares once: the run,
its checks and their calibration gate, the prepared agent, the model prices and the judge. Its
`SHERLOCK_RUN_CONCURRENCY` threads each take a trial (the shard's own, then the run's other
pending ones: `Work`), claim it by compare-and-set with a lease, call the agent, score every
check and collect the evidence. Agent and judge calls are I/O, so trials overlap on threads;
a trial's own calls stay in order (its checks read the agent's answer), so C threads keep
exactly C calls in flight.

Nothing is written while a trial runs: its judge calls are kept with it (`_judge_recorder`),
and a writer thread (`Writer`) writes finished trials in batches, each trial with its check
results, judge calls and cost lines in the same transaction, guarded by the claim's attempt
number so that a worker whose lease was taken over cannot write a second set of results.

The worker that finishes the last trial computes the case results and the summary, guarded by
a compare-and-set on `Run.finalized_at`, and sends `run_finished` on commit. `reap` hands back
what dead workers left behind (see its docstring); it runs on a django-q2 schedule and whenever
a worker process starts.
"""

import logging
import os
import queue
import socket
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, F, Max, OuterRef, Q
from django.utils import timezone

from agents.adapters import AgentCallError, prepare
from evaluations import checks as check_library
from evaluations import scoring
from evaluations.choices import (
    RUN_TERMINAL,
    TRIAL_FINISHED,
    BillingCoverage,
    CheckStatus,
    CostKind,
    RunStatus,
    TrialStatus,
)
from evaluations.models import (
    CaseResult,
    CheckResult,
    CostEntry,
    ModelPrice,
    Run,
    Trial,
)
from evaluations.signals import run_finished
from sherlock.bulk import insert

log = logging.getLogger("sherlock.engine")

ACTIVE = [RunStatus.QUEUED, RunStatus.RUNNING]


def worker_name():
    """host:pid of this process; read per call, since django-q2 forks workers after import."""
    return f"{socket.gethostname()}:{os.getpid()}"


# --- the judge, with its calls written in the trial's transaction ---------------------------

_ledger = threading.local()


def _judge_recorder(calls, context):
    """Keep a trial's judge calls with the trial (they are written in its transaction, priced
    there, and so cost no statement of their own); outside a trial, store them at once."""
    pending = getattr(_ledger, "calls", None)
    if pending is None:
        from evaluations.judge import record_calls

        record_calls(calls, context)
    else:
        pending.extend(calls)


_engine_judge = (None, None)
_engine_judge_lock = threading.Lock()


def engine_judge():
    """The configured judge (None without one), recording through `_judge_recorder`.

    Built like the default judge (same settings), and rebuilt whenever the default one is (a
    settings change, `reset_default_judges`), so both see the same configuration and cache life.
    """
    global _engine_judge
    from evaluations.judge import JudgeClient, get_default_judge

    default = get_default_judge()
    if default is None:
        return None
    with _engine_judge_lock:
        if _engine_judge[0] is not default:
            _engine_judge = (default, JudgeClient(recorder=_judge_recorder))
        return _engine_judge[1]


class CheckJudge:
    """Passes one check's judge model to the judge: `evaluate()` asks without a model."""

    __slots__ = ("judge", "model")

    def __init__(self, judge, model):
        self.judge, self.model = judge, model

    def ask(self, rubric, variables, *, model=None, **options):
        return self.judge.ask(rubric, variables, model=model or self.model, **options)


# --- one shard -------------------------------------------------------------------------------


@dataclass
class Shard:
    """What every trial of a shard shares, loaded once."""

    run: Run
    checks: list
    uncalibrated: dict  # label -> reason (calibration_gate)
    agent: object  # a PreparedAgent, or None when the version cannot be prepared
    agent_error: str
    prices: dict  # model name -> ModelPrice
    judge: object  # JudgeClient or None
    collect_evidence: object  # evaluations.evidence.collect_evidence, or None

    @classmethod
    def load(cls, run):
        from evaluations.calibration import calibration_gate

        checks = list(
            run.dataset_version.checks.select_related("dataset_version").order_by(
                "position", "label"
            )
        )
        try:
            agent, agent_error = prepare(run.agent_version), ""
        except AgentCallError as exc:
            agent, agent_error = None, str(exc)
        return cls(
            run=run,
            checks=checks,
            uncalibrated=calibration_gate(checks),
            agent=agent,
            agent_error=agent_error,
            prices={price.model: price for price in ModelPrice.objects.all()},
            judge=engine_judge(),
            collect_evidence=_evidence_collector(),
        )


def _evidence_collector():
    try:
        from evaluations.evidence import collect_evidence
    except ImportError:  # the contract's evidence step is optional for the engine
        return None
    return collect_evidence


def run_shard(run_id, trial_ids):
    """Execute one shard's pending trials with bounded concurrency, then try to finish the run."""
    run = (
        Run.objects.select_related("agent_version__agent", "dataset_version")
        .filter(pk=run_id)
        .first()
    )
    if run is None:
        return 0
    trials = []
    if run.status not in RUN_TERMINAL:
        trials = list(
            Trial.objects.filter(pk__in=trial_ids, run_id=run_id, status=TrialStatus.PENDING)
            .select_related("case_version__case")
            .order_by("pk")
        )
    if not trials:
        maybe_finish_run(run_id)
        return 0
    shard = Shard.load(run)
    if run.status == RunStatus.QUEUED:
        Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(
            status=RunStatus.RUNNING, started_at=timezone.now()
        )
    work = Work(run, trials)
    threads = settings.SHERLOCK_RUN_CONCURRENCY
    if threads <= 1 or connection.in_atomic_block:
        # Inside a transaction (the tests' sync mode) other threads could not see our rows.
        done = 0
        while (trial := work.next()) is not None:
            finished = execute_trial(shard, trial)
            if finished is not None:
                done += write_finished([finished])
    else:
        done = _execute_on_threads(shard, work, threads)
    maybe_finish_run(run_id)
    return done


class Work:
    """The trials a shard's threads take, one at a time: the shard's own first, then, while
    the run still has pending trials, some of those (claims make that safe).

    Why help: a thread that finished the shard's own trials would otherwise sit idle until the
    slowest trial of the shard ends, at the end of every shard. Taking the run's other pending
    trials (the highest ids first: those are in the shards furthest back in the queue) keeps
    every thread busy until the run runs out of work; the shards left in the queue then find
    their trials done and return at once. Helping stops at half the task timeout, so a shard
    never runs into django-q2's `timeout` however large the run.
    """

    def __init__(self, run, trials):
        self.run = run
        self.own = list(reversed(trials))
        self.helped = []
        self.below = None  # help with pending trials below this id (they go highest first)
        self.help_until = time.monotonic() + settings.Q_CLUSTER.get("timeout", 1800) / 2
        self.lock = threading.Lock()
        for trial in trials:
            trial.run = run  # one run instance for all: the evidence step reads its version

    def next(self):
        with self.lock:
            if self.own:
                return self.own.pop()
            if not self.helped and time.monotonic() < self.help_until:
                self.helped = self._pending_elsewhere()
            return self.helped.pop() if self.helped else None

    def _pending_elsewhere(self, batch=32):
        pending = Trial.objects.filter(run_id=self.run.pk, status=TrialStatus.PENDING)
        if self.below is not None:
            pending = pending.filter(pk__lt=self.below)
        found = list(pending.select_related("case_version__case").order_by("-pk")[:batch])
        if not found:
            self.help_until = 0  # the run has no more pending work for us
            return []
        self.below = found[-1].pk
        for trial in found:
            trial.run = self.run
        return list(reversed(found))


def _execute_on_threads(shard, work, threads):
    """C threads, each taking the next trial until there is none, and one writer; each thread
    closes its own database connection at the end (one per thread per shard, not per trial)."""
    writer = Writer(capacity=4 * threads)

    def loop():
        try:
            while (trial := work.next()) is not None:
                try:
                    finished = execute_trial(shard, trial)
                except Exception:  # one broken trial must not sink the shard; its lease ends
                    log.exception("trial %s failed in the engine", trial.pk)
                    connection.close()  # in case the database was the problem: reconnect
                    continue
                if finished is not None:
                    writer.put(finished)
        finally:
            connection.close()

    pool = [threading.Thread(target=loop, name=f"trial-{i}", daemon=True) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return writer.close()


def claim_trial(trial):
    """Compare-and-set the trial from `pending` to `running` with a fresh lease.

    Returns the attempt number, or None when someone else claimed it since we loaded it, or it
    was cancelled. One UPDATE, no read. Only `pending` is claimable: a trial whose worker died
    goes back to `pending` through the reaper alone, which also decides that a dead worker's
    trial in a cancelled run is cancelled, so claiming never has to look at the run.
    """
    now = timezone.now()
    claim = {
        "status": TrialStatus.RUNNING,
        "lease_expires_at": now + timedelta(seconds=settings.SHERLOCK_TRIAL_LEASE_SECONDS),
        "attempts": trial.attempts + 1,
        "worker": worker_name(),
        "started_at": now,
    }
    claimed = Trial.objects.filter(
        pk=trial.pk, status=TrialStatus.PENDING, attempts=trial.attempts
    ).update(**claim)
    if claimed != 1:
        return None
    for name, value in claim.items():  # the instance now says what the row says
        setattr(trial, name, value)
    return trial.attempts


def execute_trial(shard, trial):
    """Claim, run and score one trial; returns what it produced, ready to be written (a
    `Finished`), or None when the trial could not be claimed."""
    attempt = claim_trial(trial)
    if attempt is None:
        return None
    run = shard.run
    case = trial.case_version.as_check_input()
    _ledger.calls = judge_calls = []
    try:
        transcript, error = None, shard.agent_error
        if shard.agent is not None:
            try:
                transcript = shard.agent.call(case, repetition=trial.repetition)
            except AgentCallError as exc:
                error = str(exc)
        trial.error = error
        judge = None
        if shard.judge is not None:
            judge = shard.judge.bind(run=run, trial=trial, agent=run.agent_version.agent_id)
        results = score_trial(trial, transcript, shard.checks, judge, shard.uncalibrated)
        evidence = {}
        if shard.collect_evidence is not None:
            try:
                evidence = _trial_fields(shard.collect_evidence(trial, transcript))
            except Exception as exc:  # the trial's results stand; the gap shows as no evidence
                log.exception("collecting evidence failed on trial %s", trial.pk)
                trial.error = f"collecting evidence failed: {type(exc).__name__}: {exc}"
    finally:
        _ledger.calls = None
    return finish(shard, trial, attempt, transcript, results, judge_calls, evidence)


def score_trial(trial, transcript, checks, judge, uncalibrated=None):
    """Score every check of the run on one trial; returns unsaved CheckResult objects.

    A check that requires calibration and is not calibrated yet is scored as informative, with
    the reason appended (evaluations.calibration).
    """
    uncalibrated = uncalibrated or {}
    case_input = trial.case_version.as_check_input()
    overrides = trial.case_version.overrides
    results = []
    for check in checks:
        eff = scoring.effective_check(check, overrides)
        calls = []
        if eff.disabled:
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
                f"the agent call failed: {trial.error}",
                {},
            )
        else:
            check_judge = CheckJudge(judge, check.judge_model or None) if judge else None
            verdict = check_library.evaluate(
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
        result = CheckResult(
            trial=trial,
            check_config=check,
            score=score if status != CheckStatus.ERROR else None,
            status=status,
            blocking=blocking,
            threshold=eff.threshold,
            reason=reason,
            evidence=evidence or {},
        )
        # The JudgeCall instances it rests on; their ids go in `judge_call_ids` once written.
        result.calls = [c for c in calls or [] if c is not None]
        results.append(result)
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


def agent_cost(transcript, model, prices):
    """(usd, billing coverage) of one agent call.

    A cost the transcript reports (`cost_usd`, from the provider's bill) is `billed`. Without
    one, token usage priced with our `ModelPrice` table is `estimated`: our price list, not the
    provider's invoice, so the contract does not count it as covered cost. With no price, or no
    usage to price, the cost is unknown: `missing`, shown as "price missing", never $0.
    """
    if not transcript:
        return None, BillingCoverage.MISSING
    if transcript.get("cost_usd") is not None:
        return Decimal(str(transcript["cost_usd"])), BillingCoverage.BILLED
    usage = transcript.get("usage") or {}
    price = prices.get(transcript.get("model") or model)
    if price is not None and ("prompt_tokens" in usage or "completion_tokens" in usage):
        cost = price.cost(usage.get("prompt_tokens"), usage.get("completion_tokens"))
        return cost, BillingCoverage.ESTIMATED
    return None, BillingCoverage.MISSING


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


def finish(shard, trial, attempt, transcript, results, judge_calls, evidence):
    """Everything a trial's write needs, computed without the database."""
    run = shard.run
    agent_id = run.agent_version.agent_id
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
    real_calls = [call for call in judge_calls if not call.cached]
    for call in real_calls:
        price = shard.prices.get(call.model)
        call.usd = price.cost(call.prompt_tokens, call.completion_tokens) if price else None
    judge_usd = sum((call.usd for call in real_calls if call.usd is not None), Decimal(0))
    day = timezone.localdate(now)
    line = {"day": day, "agent_id": agent_id, "run_id": run.pk, "trial_id": trial.pk}
    costs = [
        CostEntry(
            kind=CostKind.SCORING,
            model=call.model,
            prompt_tokens=call.prompt_tokens,
            completion_tokens=call.completion_tokens,
            usd=call.usd,
            judge_call=call,
            **line,
        )
        for call in real_calls
    ]
    if called:
        costs.append(
            CostEntry(
                kind=CostKind.AGENT,
                model=model,
                prompt_tokens=fields.get("prompt_tokens", 0),
                completion_tokens=fields.get("completion_tokens", 0),
                usd=usd,
                **line,
            )
        )
    unpriced = [cost for cost in costs if cost.usd is None]
    counters = {
        "trials_done": 1,
        "trials_error": int(transcript is None),
        "spend_usd": (usd or Decimal(0)) + judge_usd,
        "judge_spend_usd": judge_usd,
        "unpriced_calls": len(unpriced),
    }
    return Finished(trial, attempt, fields, results, judge_calls, costs, counters)


def write_finished(batch):
    """Write finished trials of one run in one transaction; returns how many were written.

    Each trial's row is updated guarded by its attempt number: if its lease ran out and
    another worker re-claimed it, that matches no row, and none of that trial's results are
    written (the other worker's will be). Then the judge calls, cost lines and check results
    of the trials that were written go in with one INSERT per table, and the run's progress
    counters move once. So a trial is never half written, and a batch costs a few statements
    more than its trials' UPDATEs, however many trials it holds.
    """
    with transaction.atomic():
        kept = []
        for item in batch:
            if Trial.objects.filter(
                pk=item.trial.pk, status=TrialStatus.RUNNING, attempts=item.attempt
            ).update(**item.fields):
                kept.append(item)
            else:
                log.warning("trial %s was taken over by another worker", item.trial.pk)
        if not kept:
            return 0
        _store_judge_calls([call for item in kept for call in item.judge_calls])
        insert([cost for item in kept for cost in item.costs])
        results = [result for item in kept for result in item.results]
        for result in results:
            result.judge_call_ids = [call.pk for call in result.calls if call.pk is not None]
        insert(results)
        totals = {name: sum(item.counters[name] for item in kept) for name in kept[0].counters}
        Run.objects.filter(pk=kept[0].trial.run_id).update(
            **{name: F(name) + value for name, value in totals.items()}
        )
    return len(kept)


class Writer:
    """Writes a shard's finished trials from a thread of its own, in batches.

    A trial's thread hands its results over and takes the next trial at once, instead of
    waiting for a transaction; the writer takes whatever has finished meanwhile (up to
    `MAX_BATCH`) into one transaction (`write_finished`). If a batch fails, each of its trials
    is tried alone, so one bad trial cannot sink the others; a trial that still cannot be
    written stays `running` and the reaper runs it again when its lease ends. The queue is
    bounded, so trials wait for a writer that falls behind rather than pile up in memory.
    """

    MAX_BATCH = 64

    def __init__(self, capacity):
        self.queue = queue.Queue(maxsize=capacity)
        self.written = 0
        self.thread = threading.Thread(target=self._loop, name="trial-writer", daemon=True)
        self.thread.start()

    def put(self, finished):
        self.queue.put(finished)

    def close(self):
        """Write what is left, then stop; returns how many trials were written."""
        self.queue.put(None)
        self.thread.join()
        return self.written

    def _loop(self):
        try:
            closing = False
            while not closing:
                batch = [self.queue.get()]
                while len(batch) < self.MAX_BATCH and batch[-1] is not None:
                    try:
                        batch.append(self.queue.get_nowait())
                    except queue.Empty:
                        break
                if batch[-1] is None:
                    closing = True
                    batch.pop()
                if batch:
                    self._write(batch)
        finally:
            connection.close()

    def _write(self, batch):
        try:
            self.written += write_finished(batch)
            return
        except Exception:
            log.exception("writing %s trials failed; writing them one by one", len(batch))
        for item in batch:
            _forget_ids(item)
            try:
                self.written += write_finished([item])
            except Exception:  # left running: the reaper hands it back when its lease ends
                log.exception("writing trial %s failed", item.trial.pk)


def _forget_ids(item):
    """Undo what a rolled-back write left on a trial's unsaved objects: the ids it gave them,
    and the references to those ids, so that writing the trial again inserts new rows rather
    than rows with ids another writer may have taken since (SQLite hands rolled-back ids out
    again)."""
    paid = {call.pk for call in item.judge_calls if not call.cached and call.pk is not None}
    for obj in (*item.judge_calls, *item.costs, *item.results):
        obj.pk = None
        obj._state.adding = True
    for call in item.judge_calls:
        response = call.response or {}
        if call.cached and response.get("cached_from") in paid:
            call.response = {**response, "cached_from": None}
    for cost in item.costs:
        if CostEntry.judge_call.field.is_cached(cost):
            cost.judge_call = cost.judge_call  # its id again None: taken when it is written
    for result in item.results:
        result.judge_call_ids = []


def _store_judge_calls(calls):
    """Insert a trial's judge calls: paid calls first, so that an answer served from the cache
    by another check of the same trial can name the stored call it came from."""
    if not calls:
        return
    insert([call for call in calls if not call.cached])
    cached = [call for call in calls if call.cached]
    if not cached:
        return
    stored = {call.cache_key: call.pk for call in calls if not call.cached and call.pk}
    for call in cached:
        response = call.response or {}
        if response.get("cached_from") is None and call.cache_key in stored:
            call.response = {**response, "cached_from": stored[call.cache_key]}
    insert(cached)


# --- finishing -------------------------------------------------------------------------------


def maybe_finish_run(run_id):
    """Finish the run if every trial is finished; exactly once, whoever calls it."""
    unfinished = Trial.objects.filter(run_id=run_id).exclude(status__in=TRIAL_FINISHED)
    if unfinished.exists():
        return False
    with transaction.atomic():
        # The compare-and-set that makes finishing happen once, even with concurrent workers.
        if (
            Run.objects.filter(pk=run_id, finalized_at__isnull=True).update(
                finalized_at=timezone.now()
            )
            != 1
        ):
            return False
        run = Run.objects.select_for_update().get(pk=run_id)
        summary = compute_case_results(run)
        status = RunStatus.CANCELLED if run.status == RunStatus.CANCELLED else RunStatus.COMPLETED
        Run.objects.filter(pk=run_id).update(
            status=status, summary=summary, finished_at=timezone.now()
        )
        transaction.on_commit(
            lambda: run_finished.send(sender=Run, run_id=run_id, status=str(status))
        )
    return True


def compute_case_results(run):
    """Write one CaseResult per case (DESIGN section 5) and return the run summary.

    Cancelled trials never ran: they are no repetition of their case (a case whose every
    repetition was cancelled has no result).
    """
    rows = CheckResult.objects.filter(trial__run=run).values_list(
        "trial__case_id",
        "trial__repetition",
        "check_config__label",
        "score",
        "status",
        "blocking",
    )
    by_case = {}
    for case_id, repetition, label, score, status, blocking in rows.iterator(chunk_size=5000):
        reps = by_case.setdefault(case_id, {})
        reps.setdefault(repetition, []).append(
            {"label": label, "score": score, "status": status, "blocking": blocking}
        )
    # Trials whose checks produced no rows (no checks at all) still count as repetitions.
    executed = Trial.objects.filter(run=run).exclude(status=TrialStatus.CANCELLED)
    for case_id, repetition in executed.values_list("case_id", "repetition"):
        by_case.setdefault(case_id, {}).setdefault(repetition, [])
    case_results = []
    for case_id, reps in by_case.items():
        summary = scoring.summarize_case([reps[k] for k in sorted(reps)])
        case_results.append(
            CaseResult(
                run=run,
                case_id=case_id,
                passed=summary.passed,
                flaky=summary.flaky,
                repetitions=summary.repetitions,
                repetitions_passed=summary.repetitions_passed,
                checks=summary.checks,
            )
        )
    CaseResult.objects.filter(run=run).delete()
    CaseResult.objects.bulk_create(case_results)
    n = len(case_results)
    passed = sum(c.passed for c in case_results)
    return {
        "cases": n,
        "passed": passed,
        "failed": n - passed,
        "flaky": sum(c.flaky for c in case_results),
        "case_pass_rate": round(passed / n, 6) if n else None,
        "trials_error": Trial.objects.filter(run=run, status=TrialStatus.ERROR).count(),
        "trials_cancelled": Trial.objects.filter(run=run, status=TrialStatus.CANCELLED).count(),
    }


# --- the reaper ------------------------------------------------------------------------------


MAX_ATTEMPTS = 3


def reap(now=None):
    """Hand back what dead workers left behind; safe to run anywhere, any number of times.

    1. A `running` trial whose lease ran out (its worker died) goes back to `pending` and is
       enqueued again, once (compare-and-set on its attempt). In a cancelled run it becomes
       `cancelled` instead; after `MAX_ATTEMPTS` claims it becomes `error` (a trial that takes
       its worker down every time must not do so forever).
    2. An active run with `pending` trials and no sign of life for a lease period (no trial
       claimed, nothing enqueued) lost its shard tasks (a worker died holding them: Redis does
       not give a popped task back, the ORM broker only after `retry`): its pending trials are
       enqueued again, once per lease period (compare-and-set on `enqueued_at`). A run whose
       tasks merely wait behind a long queue may get a second copy; claims make that harmless.
    3. A run whose trials are all finished but that was never finalized (its last worker died
       between the two) is finished.
    """
    from evaluations.actions.start_run import enqueue_run

    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.SHERLOCK_TRIAL_LEASE_SECONDS)
    report = {"handed_back": 0, "cancelled": 0, "given_up": 0, "runs_requeued": 0, "finished": 0}

    handed_back = {}
    expired = Trial.objects.filter(status=TrialStatus.RUNNING, lease_expires_at__lt=now)
    for pk, run_id, attempts, run_status in expired.values_list(
        "pk", "run_id", "attempts", "run__status"
    ):
        if run_status in RUN_TERMINAL:
            outcome, fields = "cancelled", {"status": TrialStatus.CANCELLED, "finished_at": now}
        elif attempts >= MAX_ATTEMPTS:
            error = (
                f"given up after {attempts} attempts that never finished (the worker stopped, "
                "or the results could not be written)"
            )
            outcome = "given_up"
            fields = {"status": TrialStatus.ERROR, "finished_at": now, "error": error}
        else:
            outcome, fields = "handed_back", {"status": TrialStatus.PENDING}
        with transaction.atomic():
            # Compare-and-set on the attempt: a worker that just finished it wins. A hand-back
            # also needs the run to be still active (a cancel may have come in meanwhile).
            stale = Trial.objects.filter(
                pk=pk, status=TrialStatus.RUNNING, attempts=attempts, lease_expires_at__lt=now
            )
            if outcome == "handed_back":
                stale = stale.exclude(run__status__in=RUN_TERMINAL)
            changed = stale.update(lease_expires_at=None, **fields)
            if changed and outcome == "given_up":
                Run.objects.filter(pk=run_id).update(
                    trials_done=F("trials_done") + 1, trials_error=F("trials_error") + 1
                )
        report[outcome] += changed
        if changed and outcome == "handed_back":
            handed_back.setdefault(run_id, []).append(pk)

    pending = Trial.objects.filter(run=OuterRef("pk"), status=TrialStatus.PENDING)
    silent = (
        Run.objects.filter(status__in=ACTIVE, finalized_at__isnull=True)
        .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=cutoff))
        .filter(Exists(pending))
        .annotate(last_claim=Max("trials__started_at"))
        .filter(Q(last_claim__isnull=True) | Q(last_claim__lt=cutoff))
        .values_list("pk", "enqueued_at")
    )
    requeued = set()
    for run_id, enqueued_at in list(silent):
        if Run.objects.filter(pk=run_id, enqueued_at=enqueued_at).update(enqueued_at=now):
            enqueue_run(run_id)  # every pending trial, those handed back above included
            requeued.add(run_id)
    report["runs_requeued"] = len(requeued)
    for run_id, trial_ids in handed_back.items():
        if run_id not in requeued:
            enqueue_run(run_id, trial_ids=trial_ids)

    unfinished = Trial.objects.filter(run=OuterRef("pk")).exclude(status__in=TRIAL_FINISHED)
    done = Run.objects.filter(finalized_at__isnull=True).exclude(Exists(unfinished))
    for run_id in list(done.values_list("pk", flat=True)):
        report["finished"] += maybe_finish_run(run_id)
    if any(report.values()):
        log.warning("reaper: %s", report)
    return report


def reap_on_worker_start(sender=None, proc_name=None, **kwargs):
    """django-q2's `post_spawn`: a worker that starts (or replaces a dead one) reaps at once,
    so a restarted cluster does not wait for the schedule's next tick to recover a run.
    Not in django-q2's sync mode, which sends the signal in the caller's own process."""
    from django_q.conf import Conf

    if Conf.SYNC:
        return
    try:
        reap()
    except Exception:  # the worker must start even when the database is briefly away
        log.exception("the start-up reaper pass failed")
    finally:
        connection.close()
