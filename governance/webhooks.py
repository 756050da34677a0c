"""Webhooks (issue 13 point 6): `notify(event, payload)` queues one signed POST per active
endpoint subscribed to `event`, after the current transaction commits; `deliver` is the
django-q2 task that sends it with retries and backoff and logs every attempt.

Events are fired where they are decided: `run.finished` by the `run_finished` receiver
(governance.receivers), `decision.made` by DecidePublishRequest, `version.published` and
`bypass.used` by PublishVersion (and RollBackVersion), `schedule.failed` by the schedules.

A delivery is the body (compact JSON: `event`, `delivery`, `occurred_at`, `data`) signed with
HMAC-SHA256 under the endpoint's secret, sent with the headers `X-Sherlock-Event`,
`X-Sherlock-Delivery` (the same id on every retry: a receiver de-duplicates on it) and
`X-Sherlock-Signature: sha256=<hex>` (docs/governance.md "Webhooks" shows how to check it).
The secret never leaves the database: the task reads it from the endpoint when it sends.
"""

import hashlib
import hmac
import json
import time
import uuid

import httpx2
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from governance.choices import WebhookEvent
from governance.models import WebhookDelivery, WebhookEndpoint

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
    from django_q.tasks import async_task

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
        async_task(
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


def _attempt(client, endpoint, event, delivery_id, body, attempt):
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
    try:
        response = client.post(endpoint.url, content=data, headers=headers)
        status, text = response.status_code, response.text[:RESPONSE_CLIP]
    except httpx2.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:RESPONSE_CLIP]
    delivered = status is not None and 200 <= status < 300
    WebhookDelivery.objects.create(
        endpoint=endpoint,
        url=endpoint.url,
        event=event,
        delivery_id=delivery_id,
        attempt=attempt,
        body=body,
        status_code=status,
        response_body=text,
        error=error,
        delivered=delivered,
        started_at=started,
        finished_at=timezone.now(),
    )
    retry = not delivered and (status is None or status >= 500 or status in RETRIED_CLIENT_ERRORS)
    return delivered, retry


def deliver(endpoint_id, event, delivery_id, body):
    """The django-q2 task: POST `body` to the endpoint, retrying with backoff. Idempotent: a
    delivery already answered 2xx (a re-delivered task) is not sent again, and an endpoint
    deleted or deactivated meanwhile gets nothing. Returns whether it was delivered."""
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id, active=True).first()
    if endpoint is None:
        return False
    done = WebhookDelivery.objects.filter(delivery_id=delivery_id)
    if done.filter(delivered=True).exists():
        return True
    first = (done.order_by("-attempt").values_list("attempt", flat=True).first() or 0) + 1
    last = settings.SHERLOCK_WEBHOOK_MAX_ATTEMPTS
    with httpx2.Client(timeout=settings.SHERLOCK_WEBHOOK_TIMEOUT, follow_redirects=False) as client:
        for attempt in range(first, last + 1):
            delivered, retry = _attempt(client, endpoint, event, delivery_id, body, attempt)
            if delivered or not retry:
                return delivered
            if attempt < last:
                time.sleep(backoff_seconds(attempt))
    return False
