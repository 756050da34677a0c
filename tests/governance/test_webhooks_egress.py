"""Webhook endpoints follow the operator's host rules: loopback, the metadata
address, private addresses, local names and credentials in the URL are refused on save (an
error on `url`, audited) unless SHERLOCK_WEBHOOK_HOSTS lists them, and checked again before
every attempt, so an endpoint saved under laxer rules gets nothing."""

import socket

import pytest
from django.urls import reverse

from governance import webhooks
from governance.actions.create_webhook import CreateWebhook
from governance.actions.update_webhook import UpdateWebhook
from governance.choices import WebhookEvent
from governance.models import AuditEntry, WebhookDelivery, WebhookEndpoint
from sherlock.core.errors import ActionInvalid
from tests.support.loopback_webhook import LoopbackReceiver, retries

EVENTS = ["run.finished"]


@pytest.fixture
def default_hosts(settings):
    settings.SHERLOCK_WEBHOOK_HOSTS = ["*"]  # the default: public addresses only


@pytest.mark.parametrize(
    "url, phrase",
    [
        ("http://127.0.0.1:8000/hook", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://metadata.google.internal/computeMetadata/v1/", "local name"),
        ("http://localhost:5432/", "local name"),
        ("http://[::1]:9000/hook", "loopback"),
        ("http://10.20.30.40/hook", "private"),
        ("https://admin:hunter2@hooks.example.org/h", "credentials in a URL"),
    ],
)
def test_an_internal_or_credentialed_url_is_refused_and_audited(
    admin_user, default_hosts, url, phrase
):
    with pytest.raises(ActionInvalid) as refused:
        CreateWebhook(acting_user=admin_user, url=url, events=EVENTS).execute()

    assert (refused.value.field, refused.value.code) == ("url", "egress_refused")
    assert phrase in str(refused.value)
    assert not WebhookEndpoint.objects.exists()
    entry = AuditEntry.objects.get(action="governance.webhook.refused")
    assert entry.after == {"verb": "create", "code": "egress_refused"} and phrase in entry.reason


def test_the_admin_shows_the_refusal_on_the_url_field(client, admin_user, default_hosts):
    client.force_login(admin_user)

    page = client.post(
        reverse("admin:governance_webhookendpoint_add"),
        {"url": "http://169.254.169.254/latest/meta-data/", "events": EVENTS},
    )

    assert page.status_code == 200
    assert "link-local address" in page.content.decode()
    assert not WebhookEndpoint.objects.exists()
    assert AuditEntry.objects.filter(action="governance.webhook.refused").exists()


def test_changing_an_endpoint_to_the_metadata_address_is_refused(admin_user, default_hosts):
    endpoint = CreateWebhook(
        acting_user=admin_user, url="https://hooks.example.org/h", events=EVENTS
    ).execute()

    with pytest.raises(ActionInvalid, match="link-local"):
        UpdateWebhook(
            acting_user=admin_user,
            endpoint=endpoint,
            changes={"url": "http://169.254.169.254/latest/"},
        ).execute()

    endpoint.refresh_from_db()
    assert endpoint.url == "https://hooks.example.org/h"
    assert AuditEntry.objects.get(action="governance.webhook.refused").after["verb"] == "change"


def test_an_address_the_operator_lists_is_allowed(admin_user, settings):
    settings.SHERLOCK_WEBHOOK_HOSTS = ["*", "10.0.0.0/8"]

    CreateWebhook(acting_user=admin_user, url="http://10.20.30.40/hook", events=EVENTS).execute()

    assert WebhookEndpoint.objects.get().url == "http://10.20.30.40/hook"


def test_an_endpoint_no_longer_allowed_gets_nothing_and_is_not_retried(
    admin_user, settings, django_capture_on_commit_callbacks
):
    with LoopbackReceiver() as receiver:
        CreateWebhook(acting_user=admin_user, url=receiver.url, events=EVENTS).execute()
        settings.SHERLOCK_WEBHOOK_HOSTS = ["*"]  # the operator stopped allowing loopback

        with django_capture_on_commit_callbacks(execute=True):
            webhooks.notify(WebhookEvent.RUN_FINISHED, {"run": 1})

    assert receiver.received == []
    delivery = WebhookDelivery.objects.get()
    assert not delivery.delivered and delivery.status_code is None
    assert delivery.error.startswith("refused: host 127.0.0.1 is a loopback address")
    assert not retries().exists()


def test_a_name_that_resolves_to_a_private_address_at_delivery_gets_nothing(
    admin_user, default_hosts, monkeypatch, django_capture_on_commit_callbacks
):
    CreateWebhook(
        acting_user=admin_user, url="https://hooks.example.org/h", events=EVENTS
    ).execute()  # it resolves nowhere on save: let through, judged when it is sent
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, *args, **kwargs: [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.5", 0))
        ],
    )

    with django_capture_on_commit_callbacks(execute=True):
        webhooks.notify(WebhookEvent.RUN_FINISHED, {"run": 1})

    delivery = WebhookDelivery.objects.get()
    assert not delivery.delivered
    assert "resolves to 10.0.0.5, a private address" in delivery.error
    assert not retries().exists()
