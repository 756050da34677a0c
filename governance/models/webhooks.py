"""Webhook endpoints and the log of their deliveries.

An endpoint is managed only through the webhook actions (`governance.actions.*_webhook`,
audited, Admins only); its secret signs every delivery's body (`governance.webhooks`). A
`WebhookDelivery` row is one attempt at one delivery: the same `delivery_id` on every retry,
the exact body that was signed, and what the receiver answered (or the transport error).
"""

import secrets

from django.conf import settings
from django.db import models


def new_secret():
    return secrets.token_hex(32)


class WebhookEndpoint(models.Model):
    url = models.URLField(max_length=500)
    # A list of `governance.choices.WebhookEvent` values.
    events = models.JSONField(default=list)
    secret = models.CharField(max_length=64, default=new_secret)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self):
        return self.url


class WebhookDelivery(models.Model):
    endpoint = models.ForeignKey(
        WebhookEndpoint, null=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    url = models.URLField(max_length=500)  # kept when the endpoint is deleted
    event = models.CharField(max_length=40, db_index=True)
    delivery_id = models.UUIDField(db_index=True)
    attempt = models.PositiveSmallIntegerField()
    body = models.TextField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True)  # clipped to RESPONSE_CLIP characters
    error = models.TextField(blank=True)
    delivered = models.BooleanField(default=False)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()

    class Meta:
        ordering = ["-pk"]
        verbose_name_plural = "webhook deliveries"

    def __str__(self):
        return f"{self.event} {self.delivery_id} attempt {self.attempt}"
