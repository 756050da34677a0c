"""Bulk inserts of many rows with JSON columns: the ORM's `bulk_create`, or COPY on PostgreSQL.

Django 5.2 inserts a batch on PostgreSQL as ``INSERT ... SELECT * FROM UNNEST(%s::jsonb[],
...)``, and psycopg, which binds the parameters client-side, spells every JSON document of
the batch as an element of a text array literal, escaping each of its double quotes through
a Python regular expression: 10,000 case results of four checks took 2.5 s to *send*, for an
insert the server did in 0.14 s (measured by `bench/contract_100k.py`). psycopg's COPY
(``cursor.copy`` and ``write_row``) streams the same rows in its C row formatter instead. Other
databases keep `bulk_create`. Neither sends model signals; neither sets the objects' keys.
"""

from django.db import connections, router


def insert_all(model, objs):
    """Insert the unsaved instances `objs` of `model` (auto primary key), in one statement."""
    objs = list(objs)
    if not objs:
        return
    connection = connections[router.db_for_write(model)]
    if connection.vendor != "postgresql":
        model.objects.bulk_create(objs)
        return
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    sql = f"COPY {connection.ops.quote_name(model._meta.db_table)} ({columns}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for obj in objs:
            # `pre_save` fills `auto_now_add` columns as `save()` would.
            copy.write_row(
                [f.get_db_prep_save(f.pre_save(obj, add=True), connection) for f in fields]
            )
