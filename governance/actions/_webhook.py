"""What the three webhook verbs share: the Admin-only check, validation and the audit snapshot
(which never holds the secret: it says only whether the secret changed).

A URL is checked against the operator's SHERLOCK_WEBHOOK_HOSTS by the rule every user-written
destination follows (`sherlock.core.egress`): no credentials in it, and no loopback,
link-local (the metadata address), private or reserved address unless the operator lists it.
A refusal is an error on `url`, audited (`governance.webhook.refused`) like every refusal of a
governance verb."""

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from governance.choices import WebhookEvent
from governance.people.roles import is_global_admin
from sherlock.core.egress import EgressRefused, check_destination
from sherlock.core.errors import (
    ActionDenied,
    ActionInvalid,
    ActionRefused,
    raise_invalid,
)

_URL = URLValidator(schemes=["http", "https"])


def require_admin(user):
    if not is_global_admin(user):
        raise ActionDenied("Only an Admin may manage webhook endpoints.")


def clean_url(url):
    url = (url or "").strip()
    try:
        _URL(url)
    except ValidationError:
        raise ActionInvalid("Enter an http or https URL.", field="url") from None
    if len(url) > 500:
        raise ActionInvalid("The URL is longer than 500 characters.", field="url")
    try:  # the operator's host rules (sherlock.core.egress); delivery checks them again
        check_destination(url, "SHERLOCK_WEBHOOK_HOSTS")
    except EgressRefused as exc:
        raise ActionRefused(f"The URL is refused: {exc}.", field="url") from None
    return url


def clean_events(events):
    chosen = sorted(set(events or ()))
    unknown = [name for name in chosen if name not in WebhookEvent.values]
    if unknown:
        raise ActionInvalid(f"Unknown event(s): {', '.join(unknown)}.", field="events")
    if not chosen:
        raise ActionInvalid("Choose at least one event.", field="events")
    return chosen


def clean_fields(changes):
    """`changes` ("url", "events" among them) cleaned in place, every bad one reported at once
    : a bad URL and no event are two errors of one submit."""
    errors: list[ActionInvalid] = []
    for name, clean in (("url", clean_url), ("events", clean_events)):
        if name in changes:
            try:
                changes[name] = clean(changes[name])
            except ActionInvalid as exc:
                errors.append(exc)
    raise_invalid(errors)
    return changes


def snapshot(endpoint):
    return {"url": endpoint.url, "events": list(endpoint.events), "active": endpoint.active}
