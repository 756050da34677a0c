"""A real `qcluster` retries a webhook without holding a worker: the first attempt (503) ends
its task at once and leaves a ONCE schedule; the cluster's own scheduler (a pass about every
30 s) queues the retry, which is delivered (200), and the schedule is gone."""

import pytest
from django_q.models import Task

from governance import webhooks
from governance.actions.create_webhook import CreateWebhook
from governance.choices import WebhookEvent
from governance.models import WebhookDelivery
from tests.support import factories, workers
from tests.support.loopback_webhook import LoopbackReceiver, retries
from tests.support.workers import start_cluster, stop_cluster, wait_for

pytestmark = pytest.mark.slow
broker_mode = workers.broker_mode


def test_a_real_cluster_runs_the_scheduled_retry(live_db, broker_mode, tmp_path):
    admin = factories.user("admin", role="Admin")
    log_path = tmp_path / "qcluster.log"
    with LoopbackReceiver(statuses=[503, 200]) as receiver:
        CreateWebhook(acting_user=admin, url=receiver.url, events=["run.finished"]).execute()
        cluster = start_cluster(log_path, SHERLOCK_WEBHOOK_BACKOFF_MS="0")
        try:
            webhooks.notify(WebhookEvent.RUN_FINISHED, {"run": 1})  # no transaction: queued now
            first = wait_for(lambda: retries().exists(), timeout=60)
            delivered = first and wait_for(
                lambda: WebhookDelivery.objects.filter(delivered=True).exists(), timeout=90
            )
        finally:
            stop_cluster(cluster)
    log = log_path.read_text(errors="replace")[-4000:]
    assert first and delivered, log
    assert len(receiver.received) == 2
    logs = list(WebhookDelivery.objects.order_by("attempt"))
    assert [(d.attempt, d.status_code, d.delivered) for d in logs] == [
        (1, 503, False),
        (2, 200, True),
    ]
    assert not retries().exists()
    tasks = {t.name: t for t in Task.objects.filter(group="webhooks")}
    delivery = logs[0].delivery_id
    assert set(tasks) == {f"webhook-{delivery}", f"webhook-{delivery}-2"}, log
    # No wait inside a worker: the retry is its own task, started after the first had ended.
    attempt_one, attempt_two = tasks[f"webhook-{delivery}"], tasks[f"webhook-{delivery}-2"]
    assert attempt_one.stopped <= attempt_two.started
