"""Webhooks: endpoints managed by Admins only (audited, secret never in the log), deliveries
signed and received on a loopback server, logged per attempt, retried on 5xx through django-q2's
scheduler (one attempt per task, the next a ONCE schedule due after the backoff: the task never
waits), and fired by the places that decide the events."""

import ast
import hashlib
import hmac
import json
import socket
import threading
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluations.models import Run
from evaluations.signals import run_finished
from governance import webhooks
from governance.actions.create_webhook import CreateWebhook
from governance.actions.delete_webhook import DeleteWebhook
from governance.actions.publish_version import PublishVersion
from governance.actions.update_webhook import UpdateWebhook
from governance.choices import WebhookEvent
from governance.models import AuditEntry, WebhookDelivery, WebhookEndpoint
from sherlock.core.errors import ActionDenied, ActionInvalid
from tests.support import factories
from tests.support.loopback_webhook import LoopbackReceiver, retries, run_retries

ALL_EVENTS = list(WebhookEvent.values)


@pytest.fixture(autouse=True)
def fast_backoff(settings):
    settings.SHERLOCK_WEBHOOK_BACKOFF_MS = 20
    settings.SHERLOCK_WEBHOOK_MAX_BACKOFF_MS = 50
    settings.SHERLOCK_WEBHOOK_MAX_ATTEMPTS = 4
    settings.SHERLOCK_WEBHOOK_TIMEOUT = 5


@pytest.fixture
def receiver():
    with LoopbackReceiver() as server:
        yield server


def endpoint_for(admin_user, url, events=ALL_EVENTS, **extra):
    return CreateWebhook(acting_user=admin_user, url=url, events=events, **extra).execute()


def send(capture, event, payload):
    with capture(execute=True):
        webhooks.notify(event, payload)


def verify(secret, request):
    """What a receiver does (docs/governance.md): HMAC-SHA256 of the raw body, compared in
    constant time with the header."""
    expected = "sha256=" + hmac.new(secret.encode(), request["body"], hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, request["headers"]["x-sherlock-signature"])


# --- Managing endpoints ------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["Editor", "Builder", "Publisher", None])
def test_only_an_admin_manages_endpoints(role, admin_user):
    user = factories.user(f"u-{role}", role=role)
    with pytest.raises(ActionDenied):
        CreateWebhook(acting_user=user, url="https://example.org/h", events=ALL_EVENTS).execute()
    endpoint = endpoint_for(admin_user, "https://example.org/h")
    with pytest.raises(ActionDenied):
        UpdateWebhook(acting_user=user, endpoint=endpoint, changes={"active": False}).execute()
    with pytest.raises(ActionDenied):
        DeleteWebhook(acting_user=user, endpoint=endpoint).execute()
    assert WebhookEndpoint.objects.get().active
    refused = AuditEntry.objects.filter(action="governance.webhook.refused", actor=user)
    assert refused.count() == 3


def test_create_change_delete_are_audited_without_the_secret(admin_user):
    endpoint = endpoint_for(admin_user, "https://example.org/h", events=["run.finished"])
    assert len(endpoint.secret) == 64
    old_secret = endpoint.secret
    UpdateWebhook(
        acting_user=admin_user,
        endpoint=endpoint,
        changes={"events": ["run.finished", "version.published"]},
        rotate_secret=True,
    ).execute()
    endpoint.refresh_from_db()
    assert endpoint.secret != old_secret
    DeleteWebhook(acting_user=admin_user, endpoint=endpoint).execute()
    assert not WebhookEndpoint.objects.exists()
    entries = AuditEntry.objects.filter(action__startswith="governance.webhook.").order_by(
        "sequence"
    )
    assert [e.action for e in entries] == [
        "governance.webhook.create",
        "governance.webhook.change",
        "governance.webhook.delete",
    ]
    change = entries[1]
    assert change.before["events"] == ["run.finished"]
    assert change.after["events"] == ["run.finished", "version.published"]
    assert change.after["secret"] == "rotated"
    for entry in entries:
        assert old_secret not in json.dumps([entry.before, entry.after])
        assert endpoint.secret not in json.dumps([entry.before, entry.after])


@pytest.mark.parametrize(
    "url, events, field",
    [
        ("ftp://example.org/h", ALL_EVENTS, "url"),
        ("not a url", ALL_EVENTS, "url"),
        ("https://example.org/h", [], "events"),
        ("https://example.org/h", ["run.started"], "events"),
    ],
)
def test_bad_input_is_refused_naming_the_field(admin_user, url, events, field):
    with pytest.raises(ActionInvalid) as info:
        CreateWebhook(acting_user=admin_user, url=url, events=events).execute()
    assert info.value.field == field
    assert not WebhookEndpoint.objects.exists()


def test_an_unchanged_endpoint_is_refused(admin_user):
    endpoint = endpoint_for(admin_user, "https://example.org/h")
    with pytest.raises(ActionInvalid):
        UpdateWebhook(acting_user=admin_user, endpoint=endpoint, changes={"active": True}).execute()


def test_the_admin_registers_an_endpoint_in_the_admin(client, admin_user):
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:governance_webhookendpoint_add"),
        {"url": "https://example.org/hook", "events": ["run.finished", "bypass.used"]},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.events == ["bypass.used", "run.finished"] and endpoint.created_by == admin_user
    assert AuditEntry.objects.filter(action="governance.webhook.create").count() == 1
    page = client.get(reverse("admin:governance_webhookendpoint_change", args=[endpoint.pk]))
    assert endpoint.secret in page.content.decode()  # the Admin configures the receiver with it
    bad = client.post(
        reverse("admin:governance_webhookendpoint_add"),
        {"url": "ftp://example.org/hook", "events": ["run.finished"]},
    )
    assert bad.status_code == 200 and "Enter an http or https URL." in bad.content.decode()
    client.post(
        reverse("admin:governance_webhookendpoint_delete", args=[endpoint.pk]), {"post": "yes"}
    )
    assert not WebhookEndpoint.objects.exists()
    assert AuditEntry.objects.filter(action="governance.webhook.delete").count() == 1


@pytest.mark.parametrize("role", ["Editor", "Builder", "Publisher"])
def test_other_roles_cannot_reach_the_webhook_admin(client, admin_user, role):
    endpoint = endpoint_for(admin_user, "https://example.org/h")
    client.force_login(factories.user(f"u-{role}", role=role))
    assert client.get(reverse("admin:governance_webhookendpoint_add")).status_code == 403
    change = reverse("admin:governance_webhookendpoint_change", args=[endpoint.pk])
    assert client.get(change).status_code in (302, 403)
    assert client.get(reverse("admin:governance_webhookdelivery_changelist")).status_code == 403


# --- Deliveries --------------------------------------------------------------------------------


def test_a_delivery_is_signed_and_received(
    admin_user, receiver, django_capture_on_commit_callbacks
):
    endpoint = endpoint_for(admin_user, receiver.url)
    send(django_capture_on_commit_callbacks, WebhookEvent.RUN_FINISHED, {"run": 7})
    (request,) = receiver.received
    assert verify(endpoint.secret, request)
    assert not verify("another secret", request)
    body = json.loads(request["body"])
    assert body["event"] == "run.finished" and body["data"] == {"run": 7}
    assert request["headers"]["x-sherlock-event"] == "run.finished"
    assert request["headers"]["x-sherlock-delivery"] == body["delivery"]
    assert request["headers"]["content-type"] == "application/json"
    (log,) = WebhookDelivery.objects.all()
    assert (log.status_code, log.delivered, log.attempt) == (200, True, 1)
    assert log.response_body == "answer 200" and str(log.delivery_id) == body["delivery"]
    assert log.body.encode() == request["body"] and log.finished_at >= log.started_at


def test_a_failing_attempt_returns_at_once_and_schedules_the_next(
    admin_user, django_capture_on_commit_callbacks, settings, monkeypatch
):
    from django_q.models import Schedule

    settings.SHERLOCK_WEBHOOK_BACKOFF_MS = 60000  # a task that slept would take a minute
    settings.SHERLOCK_WEBHOOK_MAX_BACKOFF_MS = 600000
    with LoopbackReceiver(statuses=[503]) as receiver:
        endpoint_for(admin_user, receiver.url)
        # What the task (this thread) sleeps; the receiver's threads sleep as they like.
        task, slept, real_sleep = threading.get_ident(), [], time.sleep

        def sleep(seconds):
            if threading.get_ident() == task:
                slept.append(seconds)
            real_sleep(seconds)

        before = timezone.now()
        with monkeypatch.context() as patch:
            patch.setattr(time, "sleep", sleep)
            send(django_capture_on_commit_callbacks, WebhookEvent.RUN_FINISHED, {"run": 1})
        after = timezone.now()
    assert slept == []  # no wait inside the worker: the retry waits as a schedule
    assert len(receiver.received) == 1
    log = WebhookDelivery.objects.get()
    assert (log.attempt, log.status_code, log.delivered) == (1, 503, False)
    (retry,) = retries()
    assert retry.schedule_type == Schedule.ONCE and retry.repeats < 0  # deleted once it runs
    assert before + timedelta(seconds=60) <= retry.next_run <= after + timedelta(seconds=60)
    assert ast.literal_eval(retry.args) == (
        log.endpoint_id,
        "run.finished",
        str(log.delivery_id),
        log.body,
    )
    kwargs = ast.literal_eval(retry.kwargs)
    assert kwargs["attempt"] == 2
    assert kwargs["q_options"] == {"task_name": f"webhook-{log.delivery_id}-2", "group": "webhooks"}


def test_a_500_is_retried_by_the_scheduler_with_backoff_and_every_attempt_logged(
    admin_user, django_capture_on_commit_callbacks
):
    from django_q.models import Task

    with LoopbackReceiver(statuses=[500, 503, 200]) as receiver:
        endpoint = endpoint_for(admin_user, receiver.url)
        send(django_capture_on_commit_callbacks, WebhookEvent.DECISION_MADE, {"x": 1})
        assert len(receiver.received) == 1
        seen = run_retries()
    assert len(receiver.received) == 3
    ids = {r["headers"]["x-sherlock-delivery"] for r in receiver.received}
    assert len(ids) == 1  # the same delivery, retried
    assert all(verify(endpoint.secret, r) for r in receiver.received)
    logs = list(WebhookDelivery.objects.order_by("attempt"))
    assert [(d.attempt, d.status_code, d.delivered) for d in logs] == [
        (1, 500, False),
        (2, 503, False),
        (3, 200, True),
    ]
    # Each retry was due the backoff after the attempt before it ended (20 ms, then doubled).
    assert [attempt for attempt, _ in seen] == [2, 3]
    for (_, next_run), failed, wait in zip(seen, logs, (0.02, 0.04), strict=False):
        assert 0 <= (next_run - failed.finished_at).total_seconds() - wait < 1
    gaps = [
        b["at"] - a["at"] for a, b in zip(receiver.received, receiver.received[1:], strict=False)
    ]
    assert gaps[0] >= 0.02 and gaps[1] >= 0.04
    assert not retries().exists()  # each ONCE schedule went when it ran
    delivery = logs[0].delivery_id
    tasks = Task.objects.filter(group="webhooks").order_by("started")
    assert [t.name for t in tasks] == [
        f"webhook-{delivery}",
        f"webhook-{delivery}-2",
        f"webhook-{delivery}-3",
    ]
    assert [t.result for t in tasks] == [False, False, True]


@pytest.mark.parametrize("max_attempts", [1, 3])
def test_it_gives_up_after_the_last_attempt(
    admin_user, django_capture_on_commit_callbacks, settings, max_attempts
):
    settings.SHERLOCK_WEBHOOK_MAX_ATTEMPTS = max_attempts
    with LoopbackReceiver(statuses=[500]) as receiver:
        endpoint_for(admin_user, receiver.url)
        send(django_capture_on_commit_callbacks, WebhookEvent.RUN_FINISHED, {})
        seen = run_retries()
    assert len(receiver.received) == max_attempts
    assert [attempt for attempt, _ in seen] == list(range(2, max_attempts + 1))
    assert not WebhookDelivery.objects.filter(delivered=True).exists()
    assert list(WebhookDelivery.objects.order_by("attempt").values_list("attempt", flat=True)) == (
        list(range(1, max_attempts + 1))
    )
    assert not retries().exists()


def test_fewer_attempts_configured_meanwhile_stop_a_scheduled_retry(
    admin_user, django_capture_on_commit_callbacks, settings
):
    with LoopbackReceiver(statuses=[500]) as receiver:
        endpoint_for(admin_user, receiver.url)
        send(django_capture_on_commit_callbacks, WebhookEvent.RUN_FINISHED, {})
        settings.SHERLOCK_WEBHOOK_MAX_ATTEMPTS = 1
        run_retries()
    assert len(receiver.received) == 1
    assert WebhookDelivery.objects.count() == 1


@pytest.mark.parametrize("status", [408, 425, 429, 500, 502])
def test_a_retryable_answer_schedules_a_retry(
    admin_user, django_capture_on_commit_callbacks, status
):
    with LoopbackReceiver(statuses=[status]) as receiver:
        endpoint_for(admin_user, receiver.url)
        send(django_capture_on_commit_callbacks, WebhookEvent.RUN_FINISHED, {})
    assert len(receiver.received) == 1
    assert retries().count() == 1


@pytest.mark.parametrize("status", [400, 401, 404, 410, 422])
def test_a_client_error_is_not_retried(admin_user, django_capture_on_commit_callbacks, status):
    with LoopbackReceiver(statuses=[status, 200]) as receiver:
        endpoint_for(admin_user, receiver.url)
        send(django_capture_on_commit_callbacks, WebhookEvent.RUN_FINISHED, {})
        assert not retries().exists()
        run_retries()
    assert len(receiver.received) == 1
    assert WebhookDelivery.objects.get().status_code == status


def test_an_unreachable_endpoint_logs_the_error(admin_user, django_capture_on_commit_callbacks):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint_for(admin_user, f"http://127.0.0.1:{port}/hook")
    send(django_capture_on_commit_callbacks, WebhookEvent.RUN_FINISHED, {})
    assert WebhookDelivery.objects.count() == 1 and retries().count() == 1
    run_retries()
    logs = list(WebhookDelivery.objects.order_by("attempt"))
    assert len(logs) == 4
    assert all(d.status_code is None and "ConnectError" in d.error for d in logs)


def test_an_endpoint_deactivated_or_deleted_before_its_retry_gets_nothing(
    admin_user, django_capture_on_commit_callbacks
):
    with LoopbackReceiver(statuses=[500]) as receiver:
        kept = endpoint_for(admin_user, receiver.url + "?off")
        gone = endpoint_for(admin_user, receiver.url + "?gone")
        send(django_capture_on_commit_callbacks, WebhookEvent.RUN_FINISHED, {})
        assert retries().count() == 2
        UpdateWebhook(acting_user=admin_user, endpoint=kept, changes={"active": False}).execute()
        DeleteWebhook(acting_user=admin_user, endpoint=gone).execute()
        run_retries()
    assert len(receiver.received) == 2  # the first attempts only
    assert WebhookDelivery.objects.count() == 2
    assert not retries().exists()  # the retries ran (and did nothing): none is left


def test_only_active_subscribed_endpoints_receive(
    admin_user, receiver, django_capture_on_commit_callbacks
):
    endpoint_for(admin_user, receiver.url + "?sub", events=["version.published"])
    endpoint_for(admin_user, receiver.url + "?other", events=["bypass.used"])
    endpoint_for(admin_user, receiver.url + "?off", events=ALL_EVENTS, active=False)
    send(django_capture_on_commit_callbacks, WebhookEvent.VERSION_PUBLISHED, {})
    assert [r["path"] for r in receiver.received] == ["/hook?sub"]


def test_nothing_is_sent_when_the_transaction_rolls_back(admin_user, receiver):
    from django.db import transaction

    endpoint_for(admin_user, receiver.url)
    with pytest.raises(RuntimeError), transaction.atomic():
        webhooks.notify(WebhookEvent.RUN_FINISHED, {})
        raise RuntimeError
    assert receiver.received == []


def test_a_redelivered_task_does_not_send_again(
    admin_user, receiver, django_capture_on_commit_callbacks
):
    endpoint = endpoint_for(admin_user, receiver.url)
    send(django_capture_on_commit_callbacks, WebhookEvent.RUN_FINISHED, {})
    log = WebhookDelivery.objects.get()
    assert webhooks.deliver(endpoint.pk, log.event, str(log.delivery_id), log.body) is True
    assert len(receiver.received) == 1


def test_a_redelivered_attempt_leaves_the_retry_to_its_schedule(
    admin_user, django_capture_on_commit_callbacks
):
    """A task re-delivered after a crash that came after its attempt was logged: the retry was
    scheduled with the log row, so the task sends nothing and schedules nothing more."""
    with LoopbackReceiver(statuses=[500, 200]) as receiver:
        endpoint = endpoint_for(admin_user, receiver.url)
        send(django_capture_on_commit_callbacks, WebhookEvent.RUN_FINISHED, {})
        log = WebhookDelivery.objects.get()
        args = (endpoint.pk, log.event, str(log.delivery_id), log.body)
        assert webhooks.deliver(*args) is False
        assert webhooks.deliver(*args, attempt=1) is False
        assert len(receiver.received) == 1 and retries().count() == 1
        run_retries()
        assert webhooks.deliver(*args, attempt=2) is True
    assert len(receiver.received) == 2
    assert WebhookDelivery.objects.filter(delivered=True).get().attempt == 2


def test_an_unknown_event_is_refused():
    with pytest.raises(ValueError):
        webhooks.notify("run.started", {})


# --- Where the events are fired ---------------------------------------------------------------


def events_received(receiver):
    return [json.loads(r["body"]) for r in receiver.received]


def test_run_finished_is_fired_by_the_receiver(
    admin_user, receiver, passed_request, django_capture_on_commit_callbacks
):
    endpoint_for(admin_user, receiver.url, events=["run.finished"])
    run = passed_request.runs.select_related("agent_version__agent").get()
    with django_capture_on_commit_callbacks(execute=True):
        run_finished.send(sender=Run, run_id=run.pk, status="completed")
    (body,) = events_received(receiver)
    assert body["data"]["run"] == run.pk and body["data"]["status"] == "completed"
    assert body["data"]["agent"] == run.agent_version.agent.slug


def test_schedule_failed_is_fired_by_the_receiver(
    admin_user, receiver, django_capture_on_commit_callbacks
):
    from evaluations.models import RunSchedule
    from evaluations.signals import schedule_failed

    endpoint_for(admin_user, receiver.url, events=["schedule.failed"])
    with django_capture_on_commit_callbacks(execute=True):
        schedule_failed.send(sender=RunSchedule, schedule_id=7, error="no live version")
    (body,) = events_received(receiver)
    assert body["event"] == "schedule.failed"
    assert body["data"] == {"schedule": 7, "error": "no live version"}


def test_decision_publication_and_bypass_use_are_fired(
    admin_user,
    publisher,
    receiver,
    evaluate,
    bad_version,
    author,
    django_capture_on_commit_callbacks,
):
    from governance.actions.request_bypass import RequestBypass
    from tests.support.governance import REASON

    endpoint = endpoint_for(
        admin_user, receiver.url, events=["decision.made", "version.published", "bypass.used"]
    )
    with django_capture_on_commit_callbacks(execute=True):
        blocked = evaluate(bad_version, author, passed=False)
    with django_capture_on_commit_callbacks(execute=True):
        RequestBypass(acting_user=admin_user, publish_request=blocked, reason=REASON).execute()
        PublishVersion(acting_user=publisher, agent_version=bad_version).execute()
    bodies = events_received(receiver)
    assert [b["event"] for b in bodies] == ["decision.made", "bypass.used", "version.published"]
    assert bodies[0]["data"]["state"] == "blocked"
    assert bodies[0]["data"]["publish_request"] == blocked.pk
    assert bodies[1]["data"]["publish_request"] == blocked.pk
    assert bodies[2]["data"]["cleared_by"] == "bypass"
    assert bodies[2]["data"]["agent_version"] == bad_version.number
    assert all(verify(endpoint.secret, r) for r in receiver.received)
