"""API keys: named, expiring, revocable credentials of one user, stored hashed.

The key itself (`<prefix>.<secret>`) is shown once, when it is issued (`CreateAPIKey`), and
never stored: djangorestframework-api-key keeps the prefix (to find the row) and a SHA-512 hash
of the whole key (to check it), so a copy of the database authenticates nobody. Callers send it
as `Authorization: Token <key>` (`governance.api.authentication`).
"""

from datetime import timedelta
from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone
from rest_framework_api_key.models import AbstractAPIKey, BaseAPIKeyManager

from governance.choices import APIKeyState

# "Last used" is kept to the minute: writing it on every request would turn every API read into
# a write; once a minute per key is enough to tell a live key from a forgotten one.
LAST_USED_PRECISION = timedelta(minutes=1)


class APIKeyQuerySet(models.QuerySet):
    def usable(self):
        """Keys that still authenticate: not revoked, not expired."""
        return self.filter(revoked=False, expiry_date__gt=timezone.now())


# The key library is untyped: its manager's class is built at run time.
class APIKeyManager(BaseAPIKeyManager.from_queryset(APIKeyQuerySet)):  # type: ignore[misc]
    pass


class APIKey(AbstractAPIKey):
    """One API key of `user`: a name its owner chose, an expiry (always set: at most
    `SHERLOCK_API_KEY_MAX_DAYS` after issue), the time it last authenticated a request, and
    whether (when, by whom) it was revoked. Rows are issued and revoked only by the actions
    `CreateAPIKey` and `RevokeAPIKey`, which audit both without the secret; a revoked key stays,
    as the record of what it was, and cannot be revived (the library refuses it)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    # Overrides the library's nullable field: every Sherlock key expires.
    expiry_date = models.DateTimeField(
        verbose_name="expires", help_text="Once the key expires, clients cannot use it anymore."
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    issued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects: ClassVar[APIKeyManager] = APIKeyManager()

    class Meta(AbstractAPIKey.Meta):
        abstract = False
        verbose_name = "API key"
        verbose_name_plural = "API keys"

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @property
    def state(self):
        if self.revoked:
            return APIKeyState.REVOKED
        return APIKeyState.EXPIRED if self.has_expired else APIKeyState.ACTIVE
