"""What the three webhook verbs share: the Admin-only check, validation and the audit snapshot
(which never holds the secret: it says only whether the secret changed)."""

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from governance.choices import WebhookEvent
from governance.roles import is_global_admin
from sherlock.core.errors import ActionDenied, ActionInvalid

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
    return url


def clean_events(events):
    chosen = sorted(set(events or ()))
    unknown = [name for name in chosen if name not in WebhookEvent.values]
    if unknown:
        raise ActionInvalid(f"Unknown event(s): {', '.join(unknown)}.", field="events")
    if not chosen:
        raise ActionInvalid("Choose at least one event.", field="events")
    return chosen


def snapshot(endpoint):
    return {"url": endpoint.url, "events": list(endpoint.events), "active": endpoint.active}
