"""One way to queue a background task (django-q2), for every app.

`enqueue(func, *args, **options)` queues the task `func` (its dotted path, as django-q2 stores
it) so that a worker never sees a task whose rows are not committed yet, and never loses one
whose rows are: with the ORM broker (the embedded default) the task's row is written in the
caller's transaction, committed or rolled back with it; with any other broker (Redis) the task
is sent once the caller's transaction commits, at once outside a transaction.
"""

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction


def enqueue(func: Callable[..., Any] | str, *args: Any, broker: Any = None, **options: Any) -> None:
    """Queue `func(*args)`; `options` are django-q2's (`task_name`, `group`); `broker` is one
    of django-q2's brokers (None: the configured one)."""
    # django_q.tasks reads its models when imported: this module is imported by models' apps
    # before the registry is ready, so the import waits for the first task.
    from django_q.tasks import async_task

    def send() -> None:
        async_task(func, *args, broker=broker, **options)

    if broker is None and "orm" in settings.Q_CLUSTER:
        send()
    else:
        transaction.on_commit(send)
