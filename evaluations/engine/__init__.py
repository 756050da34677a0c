"""The run engine: execute trials, score their checks, complete the run exactly once.

Its parts, in the order a run meets them:

- `enqueue`: `enqueue_run`, one django-q2 task per shard of a run's pending trials (called by
  `StartRun` on commit, and by the reaper).
- `shards`: `run_shard`, one task: `Shard.load` loads what its trials share once, `Work` and
  `Claims` hand claimed trials to `SHERLOCK_RUN_CONCURRENCY` slots on an asyncio loop (the
  shard's own, then the run's other pending ones) and renew the leases of those it holds, and
  it tries to complete the run at the end.
- `trials`: one trial: the claim (compare-and-set with a lease; `claim_trials` for a batch,
  `renew_leases` to extend a worker's leases while it holds them),
  the agent call (awaited on the loop: `execute_claimed`; or blocking: `execute_trial`),
  `score_trial`, the evidence step, and `finished_trial`, what its write needs (a `Finished`),
  computed without the database; prices and cost lines from `evaluations.costs`.
- `database`: `Database`, the `SHERLOCK_DB_CONNECTIONS` threads through which an async shard
  does all its database work, so connections do not grow with calls in flight.
- `judging`: the engine's judge (`engine_judge`), whose calls are held with their trial
  (`ledger`, `record_judge_calls`) and written in its transaction.
- `writer`: `Writer`, a thread that writes finished trials in batches (`write_finished`), each
  trial guarded by its claim's attempt so a worker whose lease was taken over writes nothing.
- `completion`: `maybe_finish_run`, which lets exactly one caller (compare-and-set on
  `Run.finalized_at`) compute the case results and summary (`compute_case_results`) and send
  `run_finished` on commit.
- `client`: `release`, a client run's uploads closed and its trials queued for scoring (its
  answers were uploaded: `trials.uploaded_answer`), and `expire_client_runs` (the reaper's).
- `reaper`: `reap`, on a django-q2 schedule and whenever a worker starts
  (`reap_on_worker_start`), hands back what dead workers left behind.

The engine imports nothing from `evaluations.actions` (the actions start it, not the other way
round; `lint-imports` checks it). Other code imports the entry points below from here
(`bench/judge_cost.py` measures the judge's recording path through `ledger`,
`record_judge_calls` and `store_judge_calls`).
"""

from evaluations.engine.client import expire_client_runs, release
from evaluations.engine.completion import compute_case_results, maybe_finish_run
from evaluations.engine.enqueue import enqueue_run
from evaluations.engine.judging import ledger, record_judge_calls
from evaluations.engine.reaper import MAX_ATTEMPTS, reap, reap_on_worker_start
from evaluations.engine.shards import Shard, run_shard
from evaluations.engine.trials import execute_trial
from evaluations.engine.writer import Writer, store_judge_calls, write_finished

__all__ = [
    "MAX_ATTEMPTS",
    "Shard",
    "Writer",
    "compute_case_results",
    "enqueue_run",
    "execute_trial",
    "expire_client_runs",
    "ledger",
    "maybe_finish_run",
    "reap",
    "reap_on_worker_start",
    "record_judge_calls",
    "release",
    "run_shard",
    "store_judge_calls",
    "write_finished",
]
