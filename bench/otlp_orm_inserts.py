"""A gunicorn configuration for `bench/otlp_ingest.py --orm-inserts`: each worker writes an export
call's spans with the ORM's `bulk_create` instead of `production.traces.ingest.insert_rows` (COPY on
PostgreSQL, one `executemany` on SQLite), so that one bench session measures what that fast path
pays (a fast path over a library is kept only when the bench shows it pays).
Used by the bench only; `gunicorn -c python:bench.otlp_orm_inserts`."""


def post_worker_init(worker):
    import production.traces.ingest

    def orm_inserts(model, rows):
        model.objects.bulk_create([model(**row) for row in rows])

    production.traces.ingest.insert_rows = orm_inserts
