"""Writing finished trials: each with its check results, judge calls and cost lines, in batches.

A trial's thread hands its `Finished` (evaluations.engine.trials) to a `Writer`, a thread of
the shard's own, and takes the next trial at once; the writer puts whatever has finished
meanwhile into one transaction (`write_finished`). Every trial's row is updated guarded by the
attempt number of its claim, so a worker whose lease was taken over cannot write a second set
of results. Rows go in with one insert per table and batch (`sherlock.core.bulk.insert_objects`:
COPY on PostgreSQL, `bulk_create` elsewhere), which sets the primary keys on the objects: the
cost lines and check results name the judge calls they rest on.
"""

import decimal
import logging
import queue
import threading
from dataclasses import replace
from typing import Any, cast

from django.db import DataError, IntegrityError, connection, transaction
from django.db.models import F, Field
from django.utils import timezone

from evaluations.choices import BillingCoverage, TrialStatus
from evaluations.costs.ledger import write_cost_lines
from evaluations.models import CheckResult, CostEntry, JudgeCall, Run, Trial
from sherlock.core.bulk import insert_objects

log = logging.getLogger("sherlock.engine")


def write_finished(batch):
    """Write finished trials of one run in one transaction; returns how many were written.

    Each trial's row is updated guarded by its attempt number: if its lease ran out and
    another worker re-claimed it, that matches no row, and none of that trial's results are
    written (the other worker's will be). Then the judge calls, check results and cost lines
    of the trials that were written go in with one INSERT per table, the lines' daily totals
    (`evaluations.costs.ledger.write_cost_lines`: one UPDATE per day and kind of the batch) and the
    run's progress counters move once. So a trial is never half written, and a batch costs a
    few statements however many trials it holds (on PostgreSQL; elsewhere one UPDATE per trial
    more).
    """
    with transaction.atomic():
        kept = _update_trials(batch)
        written = {item.trial.pk for item in kept}
        for item in batch:
            if item.trial.pk not in written:
                log.warning("trial %s was taken over by another worker", item.trial.pk)
        if not kept:
            return 0
        store_judge_calls([call for item in kept for call in item.judge_calls])
        results = [result for item in kept for result in item.results]
        for result in results:
            result.judge_call_ids = [call.pk for call in result.calls if call.pk is not None]
        _insert(CheckResult, results)
        # Last but the counters: the daily totals' rows, like the run's, are locked from their
        # UPDATE to the commit, and every shard of the run adds to the same ones.
        write_cost_lines([cost for item in kept for cost in item.costs])
        totals = {name: sum(item.counters[name] for item in kept) for name in kept[0].counters}
        Run.objects.filter(pk=kept[0].trial.run_id).update(
            **{name: F(name) + value for name, value in totals.items()}
        )
    return len(kept)


def _update_trials(batch):
    """Each trial's row set to its new values, guarded by its claim's attempt number; returns
    the items whose row matched. On PostgreSQL one ``UPDATE ... FROM (VALUES ...) RETURNING``
    per set of fields (the trials of a batch mostly share one), with each value prepared by its
    field and cast to its column's type, instead of an ORM update per trial, whose query
    building was half of the writer's CPU; elsewhere (SQLite) that ORM update per trial."""
    if connection.vendor != "postgresql" or len(batch) == 1:
        return [
            item
            for item in batch
            if Trial.objects.filter(
                pk=item.trial.pk, status=TrialStatus.RUNNING, attempts=item.attempt
            ).update(**item.fields)
        ]
    by_fields: dict[Any, Any] = {}
    for item in batch:
        by_fields.setdefault(tuple(sorted(item.fields)), []).append(item)
    matched: set[Any] = set()
    quote = connection.ops.quote_name
    for names, items in by_fields.items():
        fields = [cast(Field, Trial._meta.get_field(name)) for name in names]
        columns = [quote(field.column) for field in fields]
        casts = ", ".join(f"%s::{field.db_type(connection)}" for field in fields)
        values = ", ".join(f"(%s::bigint, %s::integer, {casts})" for _ in items)
        params = []
        for item in items:
            params += [item.trial.pk, item.attempt]
            params += [
                field.get_db_prep_save(item.fields[field.name], connection) for field in fields
            ]
        params.append(str(TrialStatus.RUNNING))
        table = quote(Trial._meta.db_table)
        sql = (
            f"UPDATE {table} AS t SET {', '.join(f'{c} = v.{c}' for c in columns)} "
            f"FROM (VALUES {values}) AS v(id, attempt, {', '.join(columns)}) "
            "WHERE t.id = v.id AND t.attempts = v.attempt AND t.status = %s RETURNING t.id"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            matched.update(pk for (pk,) in cursor.fetchall())
    return [item for item in batch if item.trial.pk in matched]


def store_judge_calls(calls):
    """Insert a trial's judge calls: paid calls first, so that an answer served from the cache
    by another check of the same trial can name the stored call it came from."""
    if not calls:
        return
    _insert(JudgeCall, [call for call in calls if not call.cached])
    cached = [call for call in calls if call.cached]
    if not cached:
        return
    stored = {call.cache_key: call.pk for call in calls if not call.cached and call.pk}
    for call in cached:
        response = call.response or {}
        if response.get("cached_from") is None and call.cache_key in stored:
            call.response = {**response, "cached_from": stored[call.cache_key]}
    _insert(JudgeCall, cached)


def _insert(model, objs):
    insert_objects(model, objs)


class Writer:
    """Writes a shard's finished trials from a thread of its own, in batches.

    A trial's thread hands its results over and takes the next trial at once, instead of
    waiting for a transaction; the writer takes whatever has finished meanwhile (up to
    `MAX_BATCH`) into one transaction (`write_batch`). The queue is
    bounded, so trials wait for a writer that falls behind rather than pile up in memory.
    """

    MAX_BATCH = 64

    def __init__(self, capacity):
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=capacity)
        self.written = 0
        self.thread = threading.Thread(target=self._loop, name="trial-writer", daemon=True)
        self.thread.start()

    def put(self, finished):
        """Hand a finished trial over, waiting while the queue is full."""
        self.queue.put(finished)

    def offer(self, finished):
        """Hand a finished trial over if the queue has room (True), without waiting: the
        shard's loop calls this, and goes to `put` on a thread only when it must wait."""
        try:
            self.queue.put_nowait(finished)
        except queue.Full:
            return False
        return True

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
        self.written += write_batch(batch)


def write_batch(batch):
    """`write_finished`, and if the batch fails, each of its trials alone: one bad trial cannot
    sink the others. A trial whose values the database refuses (`storage_errors`) would fail
    the same way on every retry (a number past its column, a character the database refuses),
    so it ends as an error with the reason at once (`unstorable`) instead of waiting out
    leases and attempts; any other failure leaves it running, and the reaper hands it back
    when its lease ends. Returns how many trials were written."""
    try:
        return write_finished(batch)
    except Exception:
        log.exception("writing %s trials failed; writing them one by one", len(batch))
    written = 0
    for item in batch:
        _forget_ids(item)
        try:
            written += write_finished([item])
        except storage_errors() as exc:
            log.exception("trial %s cannot be stored; it ends as an error", item.trial.pk)
            try:
                written += write_finished([unstorable(item, exc)])
            except Exception:
                log.exception("writing trial %s as an error failed", item.trial.pk)
        except Exception:
            log.exception("writing trial %s failed", item.trial.pk)
    return written


# Errors that writing the same values again would meet again: the values, not the moment.
# The driver's own classes too: PostgreSQL's COPY (`sherlock.core.bulk`) raises them unwrapped.
STORAGE_ERRORS = (DataError, IntegrityError, decimal.InvalidOperation, OverflowError, ValueError)


def storage_errors():
    """`STORAGE_ERRORS` and the database driver's DataError and IntegrityError."""
    driver = connection.Database  # type: ignore[attr-defined]  # the driver module, untyped
    return (*STORAGE_ERRORS, driver.DataError, driver.IntegrityError)


def unstorable(item, exc):
    """The `Finished` of a trial whose results the database refused (`storage_errors`): the
    trial as an `error` with the database's reason, no transcript, results or cost lines, so
    the run goes on and the case reads unscored with why."""
    # The database's first line: it names the column or the constraint (the rest may quote
    # the row being written).
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    reason = f"the trial's results could not be stored: {type(exc).__name__}: {first}"
    fields = {
        "status": TrialStatus.ERROR,
        "finished_at": timezone.now(),
        "lease_expires_at": None,
        "error": reason[:2000],
        "cost_usd": None,
        "billing_coverage": BillingCoverage.MISSING,
    }
    counters = dict.fromkeys(item.counters, 0)
    counters.update(trials_done=1, trials_error=1)
    return replace(item, fields=fields, results=[], judge_calls=[], costs=[], counters=counters)


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
