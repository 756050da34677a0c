"""Where judge calls go once made: the ORM recorder (default), and a memory recorder.

Recording is pluggable so that the judge client works without a database (unit tests, the
`contract` command on a trial-record file) and so that the run engine can batch writes later.
A recorder is any callable `recorder(calls, context)`: `calls` is the list of unsaved
`JudgeCall` instances of one ask (every HTTP attempt, or the one cache hit), `context` the
`JudgeContext` the judge was bound to. A recorder may set fields on the instances (the ORM one
sets `usd` and, by saving, `pk`); the ask's `JudgeAnswer.calls` are those same instances.

A cache lookup is the matching read side: `lookup(cache_key) -> CachedAnswer | None`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connections, router, transaction
from django.utils import timezone

from evaluations.judge.cache import CachedAnswer
from sherlock.bulk import fetch_all, insert

if TYPE_CHECKING:
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


def record_calls(calls: Sequence[JudgeCall], context: JudgeContext) -> None:
    """Store the calls of one ask, and a scoring line in the cost ledger for each real call.

    The price comes from `ModelPrice` at the time of the call; a model without a price gets
    `usd=None` on the call and on its cost entry ("price missing", never $0). A cache hit
    (`cached=True`) costs nothing and gets no cost entry: its `usd` stays null too, which the
    `cached` flag tells apart from a missing price (`JudgeCall.price_missing`).

    One transaction per ask, with bulk inserts: an ask costs one price lookup and two INSERTs
    whatever its number of attempts (plus one lookup of the run's agent when the judge was
    bound to a bare run id without `agent=`).
    """
    from evaluations.choices import CostKind
    from evaluations.models import CostEntry, JudgeCall, ModelPrice, Run

    if not calls:
        return
    real = [call for call in calls if not call.cached]
    if real:
        # Every call of one ask goes to the same model: one price lookup.
        price = ModelPrice.objects.filter(model=real[0].model).first()
        for call in real:
            call.usd = price.cost(call.prompt_tokens, call.completion_tokens) if price else None
    agent_id = context.agent_id
    if agent_id is None and context.run_id is not None and real:
        agent_id = (
            Run.objects.filter(pk=context.run_id)
            .values_list("agent_version__agent_id", flat=True)
            .first()
        )
    alias = router.db_for_write(JudgeCall)
    bulk_returns_ids = connections[alias].features.can_return_rows_from_bulk_insert
    day = timezone.localdate()
    with transaction.atomic(using=alias):
        if bulk_returns_ids:
            insert(list(calls), using=alias)
        else:  # e.g. SQLite older than 3.35: the cost entries need the calls' ids
            for call in calls:
                call.save(using=alias)
        if real:
            insert(
                [
                    CostEntry(
                        kind=CostKind.SCORING,
                        day=day,
                        model=call.model,
                        prompt_tokens=call.prompt_tokens,
                        completion_tokens=call.completion_tokens,
                        usd=call.usd,
                        agent_id=agent_id,
                        run_id=context.run_id,
                        trial_id=context.trial_id,
                        judge_call=call,
                    )
                    for call in real
                ],
                using=alias,
            )


def lookup_cached(cache_key: str) -> CachedAnswer | None:
    """The newest successful stored call with this key, as a cache entry (one indexed query).

    Runs once per ask that misses the in-process cache, so it is one plain SQL statement (the
    same one the ORM would write for `filter(...).order_by("-id").values_list(...).first()`),
    built once, rather than a queryset built and compiled on every call, and it goes out
    through `sherlock.bulk.fetch_all` (the driver's cursor unless queries are being logged).
    """
    from evaluations.models import JudgeCall

    alias = router.db_for_read(JudgeCall)
    connection = connections[alias]
    sql = _lookup_sql.get(alias)
    if sql is None:
        qn = connection.ops.quote_name
        meta = JudgeCall._meta
        pk = qn(meta.pk.column)
        sql = _lookup_sql[alias] = (
            f"SELECT {pk}, {qn(meta.get_field('raw_answer').column)} "
            f"FROM {qn(meta.db_table)} "
            f"WHERE {qn(meta.get_field('cache_key').column)} = %s "
            f"AND {qn(meta.get_field('status').column)} = %s "
            f"ORDER BY {pk} DESC LIMIT 1"
        )
    rows = fetch_all(connection, sql, (cache_key, str(JudgeCall.Status.OK)))
    row = rows[0] if rows else None
    if row is None:
        return None
    call_id, raw = row
    return CachedAnswer(raw=raw, source_call_id=call_id)


_lookup_sql: dict[str, str] = {}


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
