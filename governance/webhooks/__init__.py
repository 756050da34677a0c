"""Webhooks: `notify(event, payload)` queues one signed POST per active
endpoint subscribed to `event`, after the current transaction commits; `deliver` is the
django-q2 task that makes one attempt, logs it, and leaves a retry to django-q2's scheduler.

Events are fired where they are decided: `run.finished` by the `run_finished` receiver
(governance.receivers), `decision.made` by DecidePublishRequest, `version.published` and
`bypass.used` by PublishVersion (and RollBackVersion), `schedule.failed` by the schedules.

A delivery is the body (compact JSON: `event`, `delivery`, `occurred_at`, `data`) signed with
HMAC-SHA256 under the endpoint's secret, sent with the headers `X-Sherlock-Event`,
`X-Sherlock-Delivery` (the same id on every retry: a receiver de-duplicates on it) and
`X-Sherlock-Signature: sha256=<hex>` (docs/governance.md "Webhooks" shows how to check it).
The secret never leaves the database: the task reads it from the endpoint when it sends.
Before each attempt the URL is checked again against SHERLOCK_WEBHOOK_HOSTS
(`sherlock.core.egress`, on its addresses as they resolve then); a refused attempt is logged as
a failed delivery with the reason and not retried.

Retries never wait inside a worker: an attempt that fails with a retryable answer, with attempts
left, creates a django-q2 `Schedule` of type ONCE for the next attempt at now + backoff, in the
same transaction as its log row, and the task returns. The cluster's scheduler (a pass about
every 30 s) queues it when due and deletes the row (a ONCE schedule with negative repeats), so
retry rows do not pile up and a wait is the backoff at least, rounded up to the next pass.
"""

import hashlib
import hmac
import json
import uuid
from datetime import timedelta

import httpx2
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from governance.choices import WebhookEvent
from governance.models import WebhookDelivery, WebhookEndpoint
from sherlock.core.egress import EgressRefused, check_destination
from sherlock.core.queue import enqueue

RESPONSE_CLIP = 2000
SIGNATURE_HEADER = "X-Sherlock-Signature"
EVENT_HEADER = "X-Sherlock-Event"
DELIVERY_HEADER = "X-Sherlock-Delivery"
# Answers worth another attempt; any other 4xx means the request itself is refused.
RETRIED_CLIENT_ERRORS = {408, 425, 429}


def sign(secret, body):
    """The signature header's value for `body` (bytes) under `secret`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def notify(event, payload):
    """Queue the deliveries of `event` (a WebhookEvent value) with `payload` (JSON-able) once
    the caller's transaction commits (at once outside one); nothing is sent if it rolls back."""
    event = WebhookEvent(event).value
    occurred_at = timezone.now()
    transaction.on_commit(lambda: _enqueue(event, payload, occurred_at))


def _enqueue(event, payload, occurred_at):
    endpoints = WebhookEndpoint.objects.filter(active=True).values_list("pk", "events")
    for endpoint_id, events in endpoints:
        if event not in events:
            continue
        delivery_id = str(uuid.uuid4())
        body = json.dumps(
            {"event": event, "delivery": delivery_id, "occurred_at": occurred_at, "data": payload},
            cls=DjangoJSONEncoder,
            separators=(",", ":"),
            sort_keys=True,
        )
        enqueue(
            "governance.webhooks.deliver",
            endpoint_id,
            event,
            delivery_id,
            body,
            task_name=f"webhook-{delivery_id}",
            group="webhooks",
        )


def backoff_seconds(attempt):
    """The wait after failed attempt number `attempt` (1-based): doubled each time, capped."""
    wait = settings.SHERLOCK_WEBHOOK_BACKOFF_MS * 2 ** (attempt - 1)
    return min(wait, settings.SHERLOCK_WEBHOOK_MAX_BACKOFF_MS) / 1000


def _post(endpoint, event, delivery_id, body):
    """Send one attempt; its log row's fields and whether another attempt is worth it."""
    started = timezone.now()
    status, text, error = None, "", ""
    data = body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Sherlock-Webhooks",
        EVENT_HEADER: event,
        DELIVERY_HEADER: delivery_id,
        SIGNATURE_HEADER: sign(endpoint.secret, data),
    }
    timeout = settings.SHERLOCK_WEBHOOK_TIMEOUT
    refused = False
    try:
        # Today's host rules, on the name as it resolves now (it was checked on save, but
        # settings change and DNS answers too): a refusal is a failed delivery, never retried.
        check_destination(endpoint.url, "SHERLOCK_WEBHOOK_HOSTS", strict=True)
        with httpx2.Client(timeout=timeout, follow_redirects=False) as client:
            response = client.post(endpoint.url, content=data, headers=headers)
        status, text = response.status_code, response.text[:RESPONSE_CLIP]
    except EgressRefused as exc:
        error, refused = f"refused: {exc} (SHERLOCK_WEBHOOK_HOSTS)"[:RESPONSE_CLIP], True
    except httpx2.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:RESPONSE_CLIP]
    delivered = status is not None and 200 <= status < 300
    retry = not delivered and not refused
    retry = retry and (status is None or status >= 500 or status in RETRIED_CLIENT_ERRORS)
    logged = {
        "status_code": status,
        "response_body": text,
        "error": error,
        "delivered": delivered,
        "started_at": started,
        "finished_at": timezone.now(),
    }
    return logged, retry


def _schedule_retry(endpoint_id, event, delivery_id, body, failed):
    """django-q2's ONCE schedule for the attempt after attempt number `failed`, due after its
    backoff; the scheduler deletes it when it queues the task."""
    # Imported here: django_q's models are read once the app registry is ready (this module loads
    # with it).
    from django_q.models import Schedule
    from django_q.tasks import schedule

    attempt = failed + 1
    name = f"webhook-{delivery_id}-{attempt}"
    schedule(
        "governance.webhooks.deliver",
        endpoint_id,
        event,
        delivery_id,
        body,
        attempt=attempt,
        q_options={"task_name": name, "group": "webhooks"},
        name=name,
        schedule_type=Schedule.ONCE,
        next_run=timezone.now() + timedelta(seconds=backoff_seconds(failed)),
    )


def deliver(endpoint_id, event, delivery_id, body, attempt=1):
    """The django-q2 task: POST `body` to the endpoint once, as attempt number `attempt`, and
    log it; a retryable failure with attempts left schedules the next attempt (module
    docstring) instead of waiting. Idempotent: a delivery already answered 2xx is not sent
    again, an attempt already logged (a re-delivered task: its retry, if any, was scheduled in
    the same transaction) is not made again, and an endpoint deleted or deactivated meanwhile
    gets nothing. Returns whether the delivery is delivered."""
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id, active=True).first()
    if endpoint is None:
        return False
    done = WebhookDelivery.objects.filter(delivery_id=delivery_id)
    if done.filter(delivered=True).exists():
        return True
    if (
        attempt > settings.SHERLOCK_WEBHOOK_MAX_ATTEMPTS
        or done.filter(attempt__gte=attempt).exists()
    ):
        return False
    logged, retry = _post(endpoint, event, delivery_id, body)
    with transaction.atomic():
        WebhookDelivery.objects.create(
            endpoint=endpoint,
            url=endpoint.url,
            event=event,
            delivery_id=delivery_id,
            attempt=attempt,
            body=body,
            **logged,
        )
        if retry and attempt < settings.SHERLOCK_WEBHOOK_MAX_ATTEMPTS:
            _schedule_retry(endpoint_id, event, delivery_id, body, attempt)
    return logged["delivered"]
