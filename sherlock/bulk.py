"""`insert`: `bulk_create` for the hot paths, with the SQL built once per model and row count.

The run engine stores the judge calls and check results of every trial it finishes. Django's
`bulk_create` compiles its INSERT anew each time, field by field and row by row, and converts
every value through the field's `get_db_prep_save`; together that costs several times what SQLite
or PostgreSQL spend executing the statement (a quarter of a judge call's client CPU went to its
row; bench/judge_cost.py). Here the statement text is built once per model, database and row
count; a value that already has the plain Python type of one of Django's own plain fields (a
`str` for a CharField or TextField, an `int` for an integer field or a foreign key to an integer
key, a `bool`, a `float`, or None where null is allowed) goes to the database as it is, which
is what its `get_db_prep_save` would return; every other value takes the field's own
`pre_save` and `get_db_prep_save` (dates, decimals, JSON, anything custom). The statement still
goes out through `fetch_all`: the driver's cursor, or Django's when queries are being logged
(DEBUG, `assertNumQueries`).

Same contract as `bulk_create` without options, for values that are not expressions (`F()`,
functions: use `bulk_create` for those): no signals, `save()` not called, the primary
keys set on the objects afterwards. A model with a field that needs its own SQL placeholder,
a database that cannot return the ids of a multi-row INSERT, or objects that already have a
primary key, or a model with a database default, a generated field, a non-automatic or
inherited primary key take `bulk_create` itself.
"""

from __future__ import annotations

from functools import cache

from django.db import connections, models, router, transaction

__all__ = ["fetch_all", "insert"]

# Django's own field classes whose `get_db_prep_save` returns a value of this type unchanged.
_PLAIN = {
    models.CharField: str,
    models.TextField: str,
    models.SlugField: str,
    models.EmailField: str,
    models.BooleanField: bool,
    models.FloatField: float,
    models.IntegerField: int,
    models.BigIntegerField: int,
    models.SmallIntegerField: int,
    models.PositiveIntegerField: int,
    models.PositiveBigIntegerField: int,
    models.PositiveSmallIntegerField: int,
}


def _plain_type(field: models.Field) -> type | None:
    if type(field) is models.ForeignKey:
        return _plain_type(field.target_field) or (
            int if isinstance(field.target_field, models.AutoField) else None
        )
    return _PLAIN.get(type(field))


@cache
def _plan(model: type[models.Model], alias: str):
    """(fields with their plain types, the statement's head, its RETURNING clause, the
    relation fields, the fields), or None for a model `bulk_create` must handle."""
    connection = connections[alias]
    meta = model._meta
    if not connection.features.can_return_rows_from_bulk_insert:
        return None
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    if (
        meta.parents
        or not isinstance(meta.pk, models.AutoField)
        or any(
            hasattr(f, "get_placeholder")
            or f.db_returning
            or f.generated
            or f.db_default is not models.NOT_PROVIDED
            for f in fields
        )
    ):
        return None
    qn = connection.ops.quote_name
    columns = ", ".join(qn(f.column) for f in fields)
    head = f"INSERT INTO {qn(meta.db_table)} ({columns}) VALUES "
    returning, _ = connection.ops.return_insert_columns([meta.pk])
    # (field, attname, plain type, None may pass as it is): never for auto_now(_add), whose
    # pre_save fills the time in.
    auto = {f for f in fields if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)}
    plain = [(f, f.attname, _plain_type(f), f.null and f not in auto) for f in fields]
    return plain, head, returning, [f for f in fields if f.is_relation], fields


_MAX_ROWS = 256  # rows per statement, which also bounds the statements kept below


@cache
def _statement(model: type[models.Model], alias: str, rows: int) -> str:
    fields, head, returning, *_ = _plan(model, alias)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    return head + ", ".join([row] * rows) + " " + returning


def _values(obj: models.Model, fields, connection) -> list:
    values = []
    for field, attname, plain, null in fields:
        value = getattr(obj, attname)
        if type(value) is not plain and (value is not None or not null):
            value = field.get_db_prep_save(field.pre_save(obj, True), connection)
        values.append(value)
    return values


def insert(objs: list[models.Model], using: str | None = None) -> list[models.Model]:
    """INSERT new instances of one model in as few statements as the database allows; sets
    their primary keys. Returns `objs`."""
    if not objs:
        return objs
    model = type(objs[0])
    alias = using or router.db_for_write(model)
    plan = _plan(model, alias)
    if plan is None or any(obj.pk is not None for obj in objs):
        return model._default_manager.using(alias).bulk_create(objs)
    fields, _, _, relations, model_fields = plan
    if relations:  # as bulk_create: a related object saved since it was assigned gives its id
        for obj in objs:
            if any(field.is_cached(obj) for field in relations):
                obj._prepare_related_fields_for_save("bulk_create", fields=relations)
    connection = connections[alias]
    size = min(max(connection.ops.bulk_batch_size(model_fields, objs), 1), _MAX_ROWS)
    pk = model._meta.pk
    with transaction.atomic(using=alias, savepoint=False):
        for start in range(0, len(objs), size):
            batch = objs[start : start + size]
            params = [value for obj in batch for value in _values(obj, fields, connection)]
            rows = fetch_all(connection, _statement(model, alias, len(batch)), params)
            for obj, row in zip(batch, rows, strict=True):
                setattr(obj, pk.attname, row[0])
                obj._state.adding = False
                obj._state.db = alias
    return objs


_driver_sql: dict[tuple[str, str], str] = {}


def fetch_all(connection, sql: str, params) -> list[tuple]:
    """Execute `sql` (Django's `%s` placeholders, no literal `%`) and return its rows.

    On SQLite and PostgreSQL, when nothing is logging queries, through the driver's own cursor,
    in Django's connection and transaction and with Django's error mapping: on the judge's hot
    path, after each wait for the model, Django's cursor layers (and SQLite's placeholder
    rewriting) cost more CPU than the statement. With DEBUG, `assertNumQueries` or a query
    capture on, through Django's cursor, so that the statement is logged as usual.
    """
    vendor = connection.vendor
    if (
        connection.queries_logged
        or connection.execute_wrappers  # instrumentation (APM, tracing) sees every query
        or vendor not in ("sqlite", "postgresql")
    ):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    driver_sql = _driver_sql.get((vendor, sql))
    if driver_sql is None:
        # sqlite3 takes ? where Django writes %s; psycopg takes %s as it is.
        driver_sql = sql.replace("%s", "?") if vendor == "sqlite" else sql
        if len(_driver_sql) < 1024:
            _driver_sql[(vendor, sql)] = driver_sql
    # What Django's cursor() checks first: not another thread's connection, not a transaction
    # already marked for rollback, a live connection.
    connection.validate_thread_sharing()
    connection.validate_no_broken_transaction()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        cursor = connection.connection.cursor()
        try:
            cursor.execute(driver_sql, params)
            return cursor.fetchall()
        finally:
            cursor.close()
