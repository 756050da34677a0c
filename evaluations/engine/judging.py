"""The engine's judge: judge calls held with the trial that made them, and each check's model.

While a trial executes, the judge calls its checks make are not written at once:
`record_judge_calls` (the recorder of the engine's judge) keeps them in the trial's list, held
in the context variable `ledger`; they are priced with the trial's other costs when it finishes
(`finished_trial` in `evaluations.engine.trials`, with `evaluations.costs.prices.price_judge_calls`)
and stored in the trial's own transaction by the writer (`evaluations.engine.writer`), so they
cost no statement of their own. A context variable, not a thread's: many trials' checks ask
the judge at once as coroutines on one loop, each in its own task's context, and their calls
must not mix. Outside a trial (no list set in this context) they are stored at once by the
judge's ORM recorder (`evaluations.judge.record_calls`). Its stored-cache lookups go through the
engine's database connections (`lookup_stored_answer`, `alookup_stored_answer`).
"""

import contextvars
import threading
from typing import Any

from evaluations.engine import database
from evaluations.judge import JudgeClient, get_default_judge, record_calls
from evaluations.judge.recording import lookup_cached

# The list of judge calls of the trial this context is executing, or None (not in a trial).
ledger: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "judge_ledger", default=None
)


def record_judge_calls(calls, context):
    """The engine judge's recorder: keep a trial's judge calls with the trial (priced with it
    and written in its transaction, so they cost no statement of their own); outside a trial,
    store them at once."""
    pending = ledger.get()
    if pending is None:
        record_calls(calls, context)
    else:
        pending.extend(calls)


async def arecord_judge_calls(calls, context):
    """`record_judge_calls` on the shard's loop: kept with the trial, or stored through the
    engine's database threads."""
    pending = ledger.get()
    if pending is None:
        await database.arun(record_calls, calls, context)
    else:
        pending.extend(calls)


def lookup_stored_answer(cache_key):
    """The engine judge's durable-cache lookup (`JudgeCall` rows): a statement, so on the
    engine's few database connections (`evaluations.engine.database`), not the check's thread."""

    return database.call(lookup_cached, cache_key)


async def alookup_stored_answer(cache_key):
    """`lookup_stored_answer` awaited on the shard's loop, through its database threads."""

    return await database.arun(lookup_cached, cache_key)


_engine_judge: tuple[Any, Any] = (None, None)
_engine_judge_lock = threading.Lock()

# Answers the engine's judge keeps in memory (the default judge keeps 4,096). Within a run a
# question is almost never asked twice (its key holds the repetition and the agent's answer),
# so a large memory only grew the worker by about 13 MB as it filled, over the first thousand
# cases (peak memory flat in N); answers from earlier runs come from the stored cache
# (`lookup_stored_answer`), and identical questions in flight still share one request.
ENGINE_CACHE_SIZE = 512


def engine_judge():
    """The configured judge (None without one), recording through `record_judge_calls`.

    Built like the default judge (same settings), and rebuilt whenever the default one is (a
    settings change, `reset_default_judges`), so both see the same configuration and cache life.
    """
    global _engine_judge

    default = get_default_judge()
    if default is None:
        return None
    with _engine_judge_lock:
        if _engine_judge[0] is not default:
            judge = JudgeClient(
                recorder=record_judge_calls,
                cache_lookup=lookup_stored_answer,
                arecorder=arecord_judge_calls,
                alookup=alookup_stored_answer,
                cache_size=ENGINE_CACHE_SIZE,
            )
            _engine_judge = (default, judge)
        return _engine_judge[1]


class CheckJudge:
    """Passes one check's judge model to the judge: `evaluate()` and `aevaluate()` ask without
    a model."""

    __slots__ = ("judge", "model")

    def __init__(self, judge, model):
        self.judge, self.model = judge, model

    def ask(self, rubric, variables, *, model=None, **options):
        return self.judge.ask(rubric, variables, model=model or self.model, **options)

    async def aask(self, rubric, variables, *, model=None, **options):
        return await self.judge.aask(rubric, variables, model=model or self.model, **options)
