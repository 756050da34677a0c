"""The run engine: execute trials, score their checks, complete the run exactly once.

Its parts, in the order a run meets them:

- `enqueue`: `enqueue_run`, one django-q2 task per shard of a run's pending trials.
- `shards`: `run_shard`, one task: what its trials share loaded once, claimed trials handed to
  `SHERLOCK_RUN_CONCURRENCY` slots on an asyncio loop, leases renewed while held.
- `trials`: one trial: the claim (compare-and-set with a lease), the agent call, `score_trial`,
  the evidence step, and `finished_trial`, what its write needs, computed without the database.
- `database`: the `SHERLOCK_DB_CONNECTIONS` threads an async shard does its database work on.
- `judging`: the engine's judge, whose calls are held with their trial and written with it.
- `writer`: a thread writing finished trials in batches, each guarded by its claim's attempt.
- `completion`: `maybe_finish_run`, exactly one caller computes the case results and summary
  and sends `run_finished` on commit.
- `client`: a client run's uploads released for scoring, and their expiry.
- `reaper`: `reap`, on a schedule and as a worker starts, hands back what dead workers left.

The engine imports nothing from `evaluations.actions` (the actions start it; `lint-imports`
checks it). Other code imports the entry points below from here. How it scales and survives a
dead worker: docs/scale-out.md.
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
