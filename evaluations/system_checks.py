"""Start-up checks: refuse a django-q2 configuration that would run a task twice.

django-q2 hands a task to another worker when it has not been acknowledged within `retry`
seconds; if `retry` is not longer than `timeout`, a shard that is still running legitimately is
started a second time (pitfalls). Every management command (runserver,
qcluster, migrate) runs these checks first and stops on an error.
"""

from django.conf import settings
from django.core import checks


@checks.register()
def q_cluster_retry_longer_than_timeout(app_configs=None, **kwargs):
    conf = getattr(settings, "Q_CLUSTER", {})
    timeout, retry = conf.get("timeout"), conf.get("retry")
    errors = []
    if timeout is None or retry is None:
        errors.append(
            checks.Error(
                "Q_CLUSTER must set both 'timeout' and 'retry'.",
                hint="Set SHERLOCK_TASK_TIMEOUT and SHERLOCK_TASK_RETRY.",
                id="sherlock.E001",
            )
        )
    elif retry <= timeout:
        errors.append(
            checks.Error(
                f"Q_CLUSTER retry ({retry}s) must be longer than timeout ({timeout}s), or a "
                "task still running is handed to a second worker.",
                hint="Set SHERLOCK_TASK_RETRY above SHERLOCK_TASK_TIMEOUT.",
                id="sherlock.E002",
            )
        )
    return errors
