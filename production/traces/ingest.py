"""Spans in: one export call's spans attributed, joined to their traces and written, in bulk.

Attribution: each `ResourceSpans` names its agent by the resource attribute `sherlock.agent`
(else `service.name`) and its version by `sherlock.agent.version` (absent: the live version when
received). The key's user must be a Builder or an Admin of that agent: production traces become
cases and evidence about a release. What names no agent the user may write to, or a version the
agent does not have, is rejected with its spans and said in `partial_success`, in the same words
whether the agent does not exist or is not the user's, so a key cannot probe for names. A span
whose trace or span id is not 16 or 8 bytes (or all zeros) is rejected alone.

Every other span is written before the answer, so what it counts as accepted is stored. A call
makes the same few statements however many spans it brings (one upsert of its traces, one read
of the spans they hold, one insert), and a span stored already (an exporter retrying) is not
stored twice. Spans join their trace in any order; its state is decided later by the closing
task (`production.traces.closing`), enqueued once per call that brought a root span, in the
call's transaction with the ORM broker, after the commit with Redis (a worker must not look
before the spans are there). docs/production.md, "Which agent and version".
"""

import json
from dataclasses import dataclass, field
from typing import Any

from django.db import connections, models, router, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from agents.models import Agent, AgentVersion
from production.models import Span, Trace
from production.traces.closing import enqueue_completion
from production.traces.otlp import TooDeepValue, attributes, clean_text, from_nanos, hex_id, nanos
from sherlock.core.bulk import insert_all
from sherlock.core.permissions import user_can

AGENT_KEYS = ("sherlock.agent", "service.name")
VERSION_KEY = "sherlock.agent.version"
ERRORS_QUOTED = 3  # distinct reasons an answer's error_message names


@dataclass
class Outcome:
    """What one export call did: spans accepted and rejected, the reasons, the traces touched
    and the traces that received a root span (to complete)."""

    accepted: int = 0
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)
    trace_ids: set[int] = field(default_factory=set)
    rooted: set[int] = field(default_factory=set)

    def reject(self, count, reason):
        self.rejected += count
        if reason not in self.reasons:
            self.reasons.append(reason)

    @property
    def error_message(self):
        quoted = "; ".join(self.reasons[:ERRORS_QUOTED])
        more = len(self.reasons) - ERRORS_QUOTED
        return quoted + (f"; and {more} more reasons" if more > 0 else "")


def ingest(request_message, user):
    """Write the spans of an `ExportTraceServiceRequest` the user may send; an Outcome."""
    outcome = Outcome()
    now = timezone.now()
    targets = _Targets(user)
    # (agent id, version id or None, trace hex) -> span rows; resource attributes per trace.
    rows_by_trace: dict[Any, Any] = {}
    resources: dict[Any, Any] = {}
    for resource_spans in request_message.resource_spans:
        count = sum(len(scope.spans) for scope in resource_spans.scope_spans)
        if not count:
            continue
        try:
            resource = attributes(resource_spans.resource.attributes)
        except TooDeepValue as exc:
            outcome.reject(count, f"a resource's attribute: {exc}")
            continue
        target, reason = targets.resolve(resource)
        if target is None:
            outcome.reject(count, reason)
            continue
        for scope_spans in resource_spans.scope_spans:
            scope_name = clean_text(scope_spans.scope.name)[:300]
            scope_version = clean_text(scope_spans.scope.version)[:100]
            for span in scope_spans.spans:
                trace_hex = hex_id(span.trace_id, 16)
                span_hex = hex_id(span.span_id, 8)
                if trace_hex is None or span_hex is None:
                    outcome.reject(1, "a span's trace_id must be 16 bytes and span_id 8, not zero")
                    continue
                try:
                    row = _span_row(span, span_hex, scope_name, scope_version, now)
                except TooDeepValue as exc:
                    outcome.reject(1, f"a span's attribute: {exc}")
                    continue
                key = (*target, trace_hex)
                resources.setdefault(key, resource)
                rows_by_trace.setdefault(key, []).append(row)
    if rows_by_trace:
        _write(rows_by_trace, resources, now, outcome)
    return outcome


class _Targets:
    """The (agent, version) a resource names: one query per agent name and version number in a
    call (the agent with the version's id beside it), and the user's permission, which the key's
    remembered user answers without a query when it is a global grant."""

    def __init__(self, user):
        self.user = user
        self.found = {}

    def resolve(self, resource):
        slug = next((resource[k] for k in AGENT_KEYS if isinstance(resource.get(k), str)), None)
        if not slug:
            return None, "the resource names no agent (set sherlock.agent)"
        number = resource.get(VERSION_KEY)
        key = (slug, None if number is None else str(number))
        if key not in self.found:
            self.found[key] = self._lookup(slug, number)
        agent, version_id = self.found[key]
        if agent is None:
            return None, f"the resource names no agent this key may write to ({slug[:100]!r})"
        if number is None:
            return (agent.pk, agent.live_version_id), None
        if version_id is None:
            return None, f"agent {agent.slug!r} has no version {str(number)[:40]!r}"
        return (agent.pk, version_id), None

    def _lookup(self, slug, number):
        """(agent or None when the user may not write to it, the named version's id or None)."""
        agents = Agent.objects.filter(slug=slug[:100])
        text = str(number).strip().removeprefix("v") if number is not None else ""
        if text.isdigit() and len(text) < 10:
            versions = AgentVersion.objects.filter(agent=OuterRef("pk"), number=int(text))
            agents = agents.annotate(named_version_id=Subquery(versions.values("pk")[:1]))
        agent = agents.first()
        if agent is None or not user_can(self.user, "build", agent):
            return None, None
        return agent, getattr(agent, "named_version_id", None)


def _span_row(span, span_hex, scope_name, scope_version, now):
    start, end = nanos(span.start_time_unix_nano), nanos(span.end_time_unix_nano)
    return {
        "span_id": span_hex,
        "parent_span_id": hex_id(span.parent_span_id, 8) or "",
        "name": clean_text(span.name)[:500],
        "kind": span.kind if 0 <= span.kind <= 5 else 0,
        "start_time": from_nanos(start),
        "end_time": from_nanos(end),
        "start_unix_nano": start,
        "end_unix_nano": end,
        "status_code": span.status.code if 0 <= span.status.code <= 2 else 0,
        "status_message": clean_text(span.status.message)[:2000],
        "scope_name": scope_name,
        "scope_version": scope_version,
        "attributes": attributes(span.attributes),
        "events": [
            {
                "name": clean_text(event.name),
                "time_unix_nano": nanos(event.time_unix_nano),
                "attributes": attributes(event.attributes),
            }
            for event in span.events
        ],
        "received_at": now,
    }


def _write(rows_by_trace, resources, now, outcome):
    with transaction.atomic():
        trace_pks = _upsert_traces(rows_by_trace, resources, now)
        # A span already stored: an exporter retrying a call whose answer it lost. The upsert
        # locked the call's traces, so a concurrent call on the same trace commits first and
        # this read (a new statement) sees its spans.
        stored = set(
            Span.objects.filter(trace_id__in=set(trace_pks.values()))
            .order_by()
            .values_list("trace_id", "span_id")
        )
        new_rows = []
        for key, rows in rows_by_trace.items():
            pk = trace_pks[key]
            for row in rows:
                if (pk, row["span_id"]) in stored:
                    continue  # sent again: already kept
                stored.add((pk, row["span_id"]))
                row["trace_id"] = pk
                new_rows.append(row)
                if not row["parent_span_id"]:
                    outcome.rooted.add(pk)
            outcome.accepted += len(rows)
            outcome.trace_ids.add(pk)
        insert_rows(Span, new_rows)
        if outcome.rooted:
            enqueue_completion(sorted(outcome.rooted))


def _upsert_traces(rows_by_trace, resources, now):
    """(agent, version, trace hex) -> Trace pk, in one statement: the ORM's `bulk_create` as an
    upsert on the (agent, trace id) constraint, which creates the traces not stored yet, moves
    the receipt time of those stored before (the quiescence window is measured from it), and
    returns every pk. Rows go in sorted, so that two calls locking the same traces lock them in
    the same order and neither waits for the other forever."""
    traces = {}
    for key, rows in rows_by_trace.items():
        agent_id, version_id, trace_hex = key
        if (agent_id, trace_hex) in traces:
            continue  # the same trace under two versions in one call: the first names it
        starts = [r["start_time"] for r in rows if r["start_time"]]
        traces[(agent_id, trace_hex)] = Trace(
            agent_id=agent_id,
            agent_version_id=version_id,
            trace_id=trace_hex,
            received_at=now,
            last_received_at=now,
            first_span_at=min(starts) if starts else None,
            resource=resources[key],
        )
    ordered = [traces[key] for key in sorted(traces)]
    Trace.objects.bulk_create(
        ordered,
        update_conflicts=True,
        unique_fields=["agent", "trace_id"],
        update_fields=["last_received_at"],
    )
    return {key: traces[(key[0], key[2])].pk for key in rows_by_trace}


def insert_rows(model, rows):
    """`sherlock.core.bulk.insert_all` (COPY on PostgreSQL), and on SQLite one `executemany`
    of prepared values: the ORM's `bulk_create` compiles a statement per 50 rows there and
    spent most of an export call's time doing it (bench/otlp_ingest.py). Measured with and
    without on PostgreSQL in one session (`--orm-inserts`, 2026-12-02): the ORM cost the server
    261 to 297 ms of CPU per 1,000 spans against 98 to 106 with COPY (docs/benchmarks.md)."""
    rows = list(rows)
    connection = connections[router.db_for_write(model)]
    if connection.vendor != "sqlite" or not rows:
        insert_all(model, rows)
        return
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    defaults = {f.attname: f.get_default() for f in fields}
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    marks = ", ".join("%s" for _ in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    sql = f"INSERT INTO {table} ({columns}) VALUES ({marks})"
    prepare = [_sqlite_preparer(f, connection) for f in fields]
    values = [
        [p(row.get(f.attname, defaults[f.attname])) for f, p in zip(fields, prepare, strict=True)]
        for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, values)


_AS_IS = (models.IntegerField, models.CharField, models.TextField, models.BooleanField)


def _sqlite_preparer(field, connection):
    """One column's value as SQLite takes it: JSON as its text, numbers, text and foreign keys
    as they are, datetimes as the backend writes them, anything else through the field."""
    if isinstance(field, models.JSONField):
        return lambda value: None if value is None else json.dumps(value, cls=field.encoder)
    target = field.target_field if field.is_relation else field
    if isinstance(target, _AS_IS):
        return lambda value: value
    if isinstance(target, models.DateTimeField):
        adapt = connection.ops.adapt_datetimefield_value
        return lambda value: None if value is None else adapt(value)
    return lambda value: field.get_db_prep_save(value, connection)
