"""Bulk inserts of many rows with JSON columns: the ORM's `bulk_create`, or COPY on PostgreSQL.

Django 5.2 inserts a batch on PostgreSQL as ``INSERT ... SELECT * FROM UNNEST(%s::jsonb[],
...)``, and psycopg, which binds the parameters client-side, spells every JSON document of
the batch as an element of a text array literal, escaping each of its double quotes through
a Python regular expression: 10,000 case results of four checks took 2.5 s to *send*, for an
insert the server did in 0.14 s (measured by `bench/contract_100k.py`). psycopg's COPY
(``cursor.copy`` and ``write_row``) streams the same rows in its C row formatter instead. Other
databases keep `bulk_create`. Neither sends model signals.

Measured with and without in one session (`bench/contract_100k.py --repeat 3`, 2026-12-02,
alternated twice, `bulk_create` swapped in for both functions): finishing a run of 100,000
trials took 1.08 and 1.00 s with COPY against 2.07 and 1.80 s without. It stays.
"""

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.db import connections, router
from django.db.models import CharField, DateTimeField, JSONField, Model, TextField
from django.db.models.fields import AutoFieldMixin


def insert_all(model: type[Model], rows: Iterable[dict[str, Any]]) -> None:
    """Insert ``rows`` into ``model``'s table (auto primary key) in one statement: each row a
    dict of attribute name (``run_id`` for a foreign key) -> value, a missing field taking its
    default. Plain dicts, not model instances: building 10,000 instances only to read their
    fields back costs more than the insert."""
    rows = list(rows)
    if not rows:
        return
    connection = connections[router.db_for_write(model)]
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    if connection.vendor != "postgresql":
        model._default_manager.bulk_create([model(**row) for row in rows])
        return
    defaults = {f.attname: f.get_default() for f in fields}
    for f in fields:
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            defaults[f.attname] = f.pre_save(model(), add=True)
    prepare = [_preparer(f, connection) for f in fields]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    sql = f"COPY {connection.ops.quote_name(model._meta.db_table)} ({columns}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(
                [
                    fn(row.get(f.attname, defaults[f.attname]))
                    for f, fn in zip(fields, prepare, strict=True)
                ]
            )


def insert_objects(model: type[Model], objs: Iterable[Model]) -> None:
    """Insert unsaved ``model`` instances, setting their primary keys as ``bulk_create`` does:
    on PostgreSQL the keys are drawn from the table's sequence first (one query) and the rows go
    in with COPY, with their keys; elsewhere ``bulk_create``. For the engine's writer, whose
    batches are many small JSON documents (judge requests, evidence), where ``bulk_create``'s
    array literals and per-object preparation cost more than the insert. Foreign keys are
    taken from related instances saved meanwhile (a cost line's judge call), and ``auto_now``
    fields are set, as ``bulk_create`` does; no signals are sent."""
    objs = list(objs)
    if not objs:
        return
    connection = connections[router.db_for_write(model)]
    if connection.vendor != "postgresql":
        model._default_manager.bulk_create(objs)
        return
    meta = model._meta
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [meta.db_table, meta.pk.column, len(objs)],
        )
        for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
            obj.pk = pk
    fields = meta.concrete_fields
    stamped = [
        f for f in fields if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
    ]
    prepare = [_preparer(f, connection) for f in fields]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    sql = f"COPY {connection.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for obj in objs:
            obj._prepare_related_fields_for_save(operation_name="insert_objects")  # type: ignore[attr-defined]  # Django's, unstubbed
            for f in stamped:
                f.pre_save(obj, add=True)
            copy.write_row(
                [fn(getattr(obj, f.attname)) for f, fn in zip(fields, prepare, strict=True)]
            )
    for obj in objs:
        obj._state.adding, obj._state.db = False, connection.alias


# Columns whose Python value psycopg writes as it is: no preparation to pay for on every row.
_PLAIN = {
    "BigIntegerField",
    "BooleanField",
    "IntegerField",
    "PositiveBigIntegerField",
    "PositiveIntegerField",
    "PositiveSmallIntegerField",
    "SmallIntegerField",
}


def _preparer(field: Any, connection: Any) -> Callable[[Any], Any]:
    """How one column's value is written: JSON as its text (the column parses it), integers and
    booleans (foreign keys included) as they are, a `str` in a plain CharField or TextField and
    an aware datetime in a plain DateTimeField as they are (what the field's preparation hands
    back for them on PostgreSQL), anything else through the field's own preparation for this
    database."""
    if isinstance(field, JSONField):
        return lambda value: None if value is None else json.dumps(value, cls=field.encoder)
    target = field.target_field if field.is_relation else field
    if (
        target.get_internal_type() in _PLAIN
        or target.primary_key
        and isinstance(target, AutoFieldMixin)
    ):
        return lambda value: value

    def prepare(value: Any) -> Any:
        return field.get_db_prep_save(value, connection)

    if type(field) in (CharField, TextField):
        return lambda value: value if type(value) is str else prepare(value)
    if type(field) is DateTimeField:
        return lambda value: (
            value if isinstance(value, datetime) and value.tzinfo is not None else prepare(value)
        )
    return prepare
