"""One shard of a run: load what its trials share, then execute them on threads.

A shard (one django-q2 task, `evaluations.tasks.run_shard`) takes trial ids and loads what
every trial shares once (`Shard.load`): the run, its checks and their calibration gate, the
prepared agent, the model prices and the engine's judge. Its `SHERLOCK_RUN_CONCURRENCY` threads
each take a trial (the shard's own, then the run's other pending ones: `Work`) and execute it
(evaluations.engine.trials); a writer thread writes the finished ones in batches
(evaluations.engine.writer). Agent and judge calls are I/O, so trials overlap on threads; a
trial's own calls stay in order (its checks read the agent's answer), so C threads keep exactly
C calls in flight. When the shard is done it tries to complete the run
(evaluations.engine.completion).
"""

import logging
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.utils import timezone

from agents.adapters import AgentCallError, prepare
from evaluations import costs
from evaluations.choices import RUN_TERMINAL, RunStatus, TrialStatus
from evaluations.engine.completion import maybe_finish_run
from evaluations.engine.judging import engine_judge
from evaluations.engine.trials import execute_trial
from evaluations.engine.writer import Writer, write_finished
from evaluations.models import Run, Trial

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
            prices=costs.load_prices(),
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
        self.help_until = time.monotonic() + settings.Q_TIMEOUT / 2
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
