"""One shard of a run: load what its trials share, then execute them overlapping on an event loop.

A shard (one django-q2 task, `evaluations.tasks.run_shard`) takes trial ids and loads what every
trial shares once (`Shard.load`): the run, its checks and their calibration gate, the prepared
agent, the model prices and the engine's judge. Then `SHERLOCK_RUN_CONCURRENCY` slots on one
asyncio loop each take a claimed trial (`Claims`: the shard's own trials, then the run's other
pending ones, `Work`, claimed in batches) and execute it (evaluations.engine.trials): the
agent's call and the checks' judge questions are awaited on the loop (blocking code, a Python-
callable agent or a tool, runs on a pool of as many threads); a writer thread writes the
finished ones in batches (evaluations.engine.writer). A trial's own calls stay in order (its
checks read the agent's answer), so C slots keep C calls in flight. None of that holds a
database connection: every statement goes through the shard's `SHERLOCK_DB_CONNECTIONS` database
threads (evaluations.engine.database), so calls in flight are not capped by PostgreSQL's
`max_connections` (one connection per trial thread stalled two workers of 64). When
the shard is done it tries to complete the run (evaluations.engine.completion).

While the loop holds claimed trials it renews their leases (`Claims.renew`), so a trial that
takes longer than a lease is not handed back to another worker while it still runs.

Inside a transaction (the tests' sync mode) the shard runs its trials one by one in the caller's
thread instead (`execute_trial`), on the caller's connection, and renews no lease.
"""

import asyncio
import collections
import contextlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from agents.adapters import AgentCallError, prepare
from agents.choices import Adapter
from evaluations.choices import RUN_STATES, RUN_TERMINAL, RunStatus, TrialStatus
from evaluations.costs.prices import load_prices
from evaluations.engine import database
from evaluations.engine.completion import maybe_finish_run
from evaluations.engine.evidence import collect_evidence
from evaluations.engine.judging import engine_judge
from evaluations.engine.stopping import maybe_stop_early
from evaluations.engine.trials import claim_trials, execute_claimed, execute_trial, renew_leases
from evaluations.engine.writer import Writer, write_finished
from evaluations.models import Run, Trial
from evaluations.reads.calibration import calibration_gate
from sherlock.core import aio

log = logging.getLogger("sherlock.engine")


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
    collect_evidence: object  # evaluations.engine.evidence.collect_evidence (None: not collected)
    # A `client` version's answers were uploaded by the client (docs/client.md): its trials
    # are scored on what they hold, the agent is never called (`trials.uploaded_answer`).
    uploaded: bool = False

    @classmethod
    def load(cls, run):
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
            prices=load_prices(),
            judge=engine_judge(),
            collect_evidence=collect_evidence,
            uploaded=run.agent_version.adapter == Adapter.CLIENT,
        )


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
    # A client run waiting for its uploads (docs/client.md): only what was uploaded is scored,
    # early; the run itself stays waiting until the client finishes it.
    waiting = run.status == RunStatus.WAITING
    if run.status not in RUN_TERMINAL:
        found = Trial.objects.filter(pk__in=trial_ids, run_id=run_id, status=TrialStatus.PENDING)
        if waiting:
            found = found.filter(uploaded_at__isnull=False)
        trials = list(found.select_related("case_version__case").order_by("pk"))
    if not trials:
        maybe_finish_run(run_id)
        return 0
    shard = Shard.load(run)
    if run.status == RunStatus.QUEUED:  # never a waiting run: the client's finish moves it
        # Whichever shard comes first starts the run; the others find it moved.
        RUN_STATES.move(run, RunStatus.RUNNING, started_at=timezone.now())
    work = Work(run, trials)
    concurrency = settings.SHERLOCK_RUN_CONCURRENCY
    if connection.in_atomic_block:
        # Inside a transaction (the tests' sync mode) other connections could not see our rows.
        done = 0
        while (trial := work.next()) is not None:
            finished = execute_trial(shard, trial)
            if finished is not None:
                done += write_finished([finished])
                if run.stop_early:
                    maybe_stop_early(run_id)  # its pending trials cancelled: none is claimed
    else:
        done = _execute_on_loop(shard, work, concurrency)
        if run.stop_early:  # the trials of the shards behind this one need not run
            maybe_stop_early(run_id)
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
        self.help_until = time.monotonic() + settings.Q_TIMEOUT / 2
        if run.stop_early:  # helping takes the last cases in seed order first: no help
            self.help_until = 0
        self.lock = threading.Lock()
        for trial in trials:
            trial.run = run  # one run instance for all: the evidence step reads its version

    def next(self):
        taken = self.take(1)
        return taken[0] if taken else None

    def take(self, n):
        """Up to `n` trials to claim: the shard's own first, then the run's other pending ones."""
        with self.lock:
            taken: list[Any] = []
            while len(taken) < n:
                if self.own:
                    taken.append(self.own.pop())
                    continue
                if not self.helped and time.monotonic() < self.help_until:
                    if taken:  # still pending until claimed: a query now would find them again
                        break
                    self.helped = self._pending_elsewhere()
                if not self.helped:
                    break
                taken.append(self.helped.pop())
            return taken

    def _pending_elsewhere(self, batch=32):
        pending = Trial.objects.filter(run_id=self.run.pk, status=TrialStatus.PENDING)
        if self.run.status == RunStatus.WAITING:  # what the client has not sent is not work yet
            pending = pending.filter(uploaded_at__isnull=False)
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


class Claims:
    """The shard loop's claimed trials: claimed in batches (`claim_trials`, one UPDATE and one
    read-back), at least a quarter of the slots' worth ahead, since slots finish one at a time
    and a claim of only the waiting slots is mostly a batch of one. Every claimed trial is
    `held` until its slot hands it on, and `renew` extends all held leases every third of a
    lease, so a trial longer than a lease is not run twice (docs/scale-out.md, "When a worker
    dies")."""

    MAX_BATCH = 64

    def __init__(self, work, db, slots=1):
        self.work, self.db = work, db
        self.ahead = max(1, min(slots // 4, self.MAX_BATCH))
        self.ready: collections.deque[Any] = collections.deque()
        self.held = {}  # trial id -> the attempt of our claim, for every trial we hold
        self.waiting = 0
        self.exhausted = False
        self.lock = asyncio.Lock()

    async def next(self):
        """The next (trial, attempt) this worker holds, or None when there is no more work."""
        self.waiting += 1
        try:
            while not self.ready and not self.exhausted:
                async with self.lock:
                    if not self.ready and not self.exhausted:
                        wanted = min(max(self.waiting, self.ahead), self.MAX_BATCH)
                        try:
                            claimed = await self.db.run(self._claim, wanted)
                        except Exception:
                            # The database is away: finish what is claimed and stop; the
                            # reaper enqueues the rest again once it answers.
                            log.exception("claiming trials of run %s failed", self.work.run.pk)
                            claimed = None
                        if claimed is None:
                            self.exhausted = True
                        else:
                            self.ready.extend(claimed)
                            self.held.update((trial.pk, attempt) for trial, attempt in claimed)
            return self.ready.popleft() if self.ready else None
        finally:
            self.waiting -= 1

    def release(self, trial):
        """The slot is done with `trial` (handed to the writer, or failed): no more renewals."""
        self.held.pop(trial.pk, None)

    async def renew(self):
        """Renew the leases of the trials held (`renew_held`) every third of a lease, until
        cancelled (when the shard's slots are done)."""
        every = settings.SHERLOCK_TRIAL_LEASE_SECONDS / 3
        while True:
            await asyncio.sleep(every)
            try:
                await self.renew_held()
            except Exception:  # the database is away: try again next round; the lease runs on
                log.exception("renewing the leases of run %s failed", self.work.run.pk)

    async def renew_held(self):
        """One round: every held trial's lease extended by one UPDATE (`renew_leases`).

        A trial whose lease was not renewed is no longer ours (the reaper handed it back while
        renewals could not reach the database, and another worker may hold it now) or was just
        written: it is renewed no more, and if it still waits in `ready` it is dropped, since
        the writer's attempt guard would throw away what running it produced."""
        held = dict(self.held)
        if not held:
            return
        kept = await self.db.run(renew_leases, held)
        lost = held.keys() - kept
        for pk in lost:
            if self.held.get(pk) == held[pk]:
                del self.held[pk]
        waiting = [claim for claim in self.ready if claim[0].pk in lost]
        if waiting:
            log.warning(
                "trials %s lost their leases before they started",
                [trial.pk for trial, _ in waiting],
            )
            for claim in waiting:
                self.ready.remove(claim)

    def _claim(self, wanted):
        # On a database thread. Trials someone else claimed meanwhile are skipped; None once
        # there is nothing left to take.
        while True:
            taken = self.work.take(wanted)
            if not taken:
                return None
            claimed = claim_trials(taken)
            if claimed:
                return claimed


def _execute_on_loop(shard, work, concurrency):
    """The shard's trials overlapping on one event loop, `concurrency` of them in flight; their
    database work on `SHERLOCK_DB_CONNECTIONS` threads (`database.Database`), their blocking
    code (Python-callable agents, tools) on a pool of `concurrency` threads that hold no
    connection, and one writer; returns how many trials were written."""
    db = database.Database(settings.SHERLOCK_DB_CONNECTIONS)
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="trial")
    writer = Writer(capacity=4 * concurrency)
    try:
        _run_loop(_trials_on_loop(shard, work, concurrency, db, pool, writer))
    finally:
        pool.shutdown(wait=True)
        written = writer.close()
        db.close()
    return written


def _run_loop(coroutine):
    """`asyncio.run`, on a thread of its own when this one already runs a loop (a caller with a
    loop of its own: Playwright's sync API in the browser tests, with django-q2's sync mode)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="shard-loop") as thread:
        return thread.submit(asyncio.run, coroutine).result()


async def _trials_on_loop(shard, work, concurrency, db, pool, writer):
    aio.blocking_pool.set(pool)
    database.active.set(db)  # code on the pool reaches the database through `db` (it copies
    # this context: `sherlock.core.aio.in_thread`)
    claims = Claims(work, db, concurrency)

    async def execute(trial, attempt):
        try:
            finished = await execute_claimed(shard, trial, attempt)
        except Exception:  # one broken trial must not sink the shard; its lease ends
            log.exception("trial %s failed in the engine", trial.pk)
            return
        if not writer.offer(finished):  # the writer falls behind: wait for it, off the loop
            await aio.in_thread(writer.put, finished)

    async def slot():
        while (claimed := await claims.next()) is not None:
            try:
                await execute(*claimed)
            finally:
                claims.release(claimed[0])

    background = [asyncio.create_task(claims.renew())]
    if shard.run.stop_early:
        background.append(asyncio.create_task(_watch(shard.run.pk, db)))
    try:
        await asyncio.gather(*(slot() for _ in range(concurrency)))
    finally:
        for task in background:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await aio.aclose_loop_clients()


async def _watch(run_id, db):
    """Read the gates of a run that stops early until it stops (its pending trials are then
    cancelled: the slots find no more to claim), or until cancelled when the shard's slots are
    done: every `SHERLOCK_STOP_EARLY_SECONDS`, or five times as long as the last reading took
    if longer (`watch_interval`), so a large run's readings never take more than a sixth of
    the database time the shard gives them (bench/stop_early_monitor.py)."""
    took = 0.0
    while True:
        await asyncio.sleep(watch_interval(took))
        started = time.monotonic()
        try:
            if await db.run(maybe_stop_early, run_id):
                return
        except Exception:  # the database is away: the next round tries again
            log.exception("reading the gates of run %s failed", run_id)
        took = time.monotonic() - started


def watch_interval(took: float) -> float:
    """Seconds until the next reading of a run's gates, the last one having taken `took`."""
    return max(float(settings.SHERLOCK_STOP_EARLY_SECONDS), 5 * took)
