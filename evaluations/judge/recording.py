"""Where judge calls go once made: the ORM recorder (default), and a memory recorder.

Recording is pluggable so that the judge client works without a database (unit tests, the
`contract` command on a trial-record file) and so that the run engine can batch writes later.
A recorder is any callable `recorder(calls, context)`: `calls` is the list of unsaved
`JudgeCall` instances of one ask (every HTTP attempt, or the one cache hit), `context` the
`JudgeContext` the judge was bound to. A recorder may set fields on the instances (the ORM one
sets `usd` and, by saving, `pk`); the ask's `JudgeAnswer.calls` are those same instances.

A cache lookup is the matching read side: `lookup(cache_key) -> CachedAnswer | None`. The
client makes its `JudgeCall` instances with `new_call`, one per attempt or cache hit. A client
asking on an event loop (`JudgeClient.aask`) may be given coroutine-function twins of both
(`arecorder`, `alookup`); without them it runs these off the loop (`sync_to_async`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connections, router, transaction
from django.utils import timezone

from evaluations.judge.cache import CachedAnswer, canonical_json, sha256
from evaluations.judge.schema import stored_request

if TYPE_CHECKING:
    from evaluations.judge.answers import Question
    from evaluations.models import JudgeCall


@dataclass(frozen=True)
class JudgeContext:
    """What a judge call is recorded against: ids only, so binding never queries."""

    run_id: int | None = None
    trial_id: int | None = None
    agent_id: int | None = None
    repetition: int = 0


Recorder = Callable[[Sequence["JudgeCall"], JudgeContext], None]
CacheLookup = Callable[[str], CachedAnswer | None]
# The same, awaited on an event loop by `JudgeClient.aask` (the engine's: through its database
# threads); a client without them runs the sync ones off the loop (`transport.OnLoop`).
AsyncRecorder = Callable[[Sequence["JudgeCall"], JudgeContext], Awaitable[None]]
AsyncCacheLookup = Callable[[str], Awaitable[CachedAnswer | None]]


def record_calls(calls: Sequence[JudgeCall], context: JudgeContext) -> None:
    """Store the calls of one ask, and a scoring line in the cost ledger for each real call.

    The price comes from `ModelPrice` at the time of the call (`evaluations.costs`); a model
    without a price gets `usd=None` on the call and on its cost entry ("price missing", never
    $0). A cache hit (`cached=True`) costs nothing and gets no cost entry: its `usd` stays null
    too, which the `cached` flag tells apart from a missing price (`JudgeCall.price_missing`).

    One transaction per ask: an ask costs one price lookup, the calls' INSERT (`bulk_create`)
    and the lines' (`evaluations.costs.ledger.write_cost_lines`, which adds them to the daily totals
    the cost page reads) whatever its number of attempts (plus one lookup of the run's agent
    when the judge was bound to a bare run id without `agent=`).
    """
    # Imported here: a cycle: evaluations.models imports the judge (judge.setup), and the ledger
    # imports the models.
    from evaluations.costs.ledger import judge_cost_lines, write_cost_lines
    from evaluations.costs.prices import price_judge_calls
    from evaluations.models import JudgeCall, Run

    if not calls:
        return
    price_judge_calls(calls)  # every call of one ask goes to the same model: one price lookup
    real = [call for call in calls if not call.cached]
    agent_id = context.agent_id
    if agent_id is None and context.run_id is not None and real:
        agent_id = (
            Run.objects.filter(pk=context.run_id)
            .values_list("agent_version__agent_id", flat=True)
            .first()
        )
    alias = router.db_for_write(JudgeCall)
    with transaction.atomic(using=alias):
        if connections[alias].features.can_return_rows_from_bulk_insert:
            JudgeCall.objects.using(alias).bulk_create(calls)
        else:  # e.g. SQLite older than 3.35: the cost entries need the calls' ids
            for call in calls:
                call.save(using=alias)
        lines = judge_cost_lines(
            real,
            day=timezone.localdate(),
            agent_id=agent_id,
            run_id=context.run_id,
            trial_id=context.trial_id,
        )
        write_cost_lines(lines)


def lookup_cached(cache_key: str) -> CachedAnswer | None:
    """The newest successful stored call with this key, as a cache entry (one indexed query,
    run once per ask that misses the in-process cache)."""
    # Imported here: a cycle: evaluations.models imports the judge (judge.setup), and the ledger
    # imports the models.
    from evaluations.models import JudgeCall

    row = (
        JudgeCall.objects.filter(cache_key=cache_key, status=JudgeCall.Status.OK)
        .order_by("-id")
        .values_list("id", "raw_answer")
        .first()
    )
    if row is None:
        return None
    call_id, raw = row
    return CachedAnswer(raw=raw, source_call_id=call_id)


def new_call(
    question: Question,
    request: dict,
    context: JudgeContext,
    *,
    attempt: int,
    response: dict | None = None,
    raw: str | None = None,
    latency_ms: float = 0.0,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    error: str | None = None,
    cached: bool = False,
) -> JudgeCall:
    """The unsaved `JudgeCall` row of one attempt at `request` (the question or its repair),
    or of one cache hit, filed under the question's cache key and the bound context."""
    # Imported here: a cycle: evaluations.models imports the judge (judge.setup), and the ledger
    # imports the models.
    from evaluations.models import JudgeCall

    return JudgeCall(
        model=question.model,
        rubric_id=question.rubric_id,
        rubric_version=question.rubric_version,
        prompt_hash=(
            question.prompt_hash
            if request is question.request
            else sha256(canonical_json(request["messages"]))
        ),
        cache_key=question.cache_key,
        cached=cached,
        attempt=attempt,
        status=(JudgeCall.Status.ERROR if error else JudgeCall.Status.OK).value,
        error=error or "",
        request=stored_request(request, question.prepared),
        response=response,
        raw_answer=raw or "",
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        latency_ms=round(latency_ms, 3),
        run_id=context.run_id,
        trial_id=context.trial_id,
    )


class MemoryRecorder:
    """Keeps the calls in a list instead of the database (tests, offline use).

    Prices are unknown here, so `usd` stays null on every call.
    """

    def __init__(self):
        self.calls: list[JudgeCall] = []
        self.contexts: list[JudgeContext] = []

    def __call__(self, calls: Sequence[JudgeCall], context: JudgeContext) -> None:
        self.calls.extend(calls)
        self.contexts.append(context)
