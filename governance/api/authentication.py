"""`Authorization: Token <key>` against the hashed API keys (`governance.models.APIKey`).

The header is the one DRF's plaintext tokens used, so callers and scripts keep working; only
what is stored changed. The key's prefix (the part before the dot, or the first eight
characters of a token converted by migration 0006, which has no dot) finds the row; the
library checks the whole key against its hash in constant time. An expired or revoked key, or
one whose user was deactivated, answers 401 saying which.
"""

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from governance.models import APIKey
from governance.models.api_keys import LAST_USED_PRECISION

PREFIX_LENGTH = APIKey._meta.get_field("prefix").max_length


class APIKeyAuthentication(authentication.TokenAuthentication):
    """DRF's `TokenAuthentication` (its header parsing and its 401 answers), looking the key up
    among the hashed `APIKey` rows instead of plaintext tokens. `request.auth` is the key."""

    keyword = "Token"

    def authenticate_credentials(self, key):
        prefix = key.partition(".")[0][:PREFIX_LENGTH]
        api_key = APIKey.objects.select_related("user").filter(prefix=prefix).first()
        if api_key is None or not api_key.is_valid(key):
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if api_key.revoked:
            raise exceptions.AuthenticationFailed(_("This API key has been revoked."))
        if api_key.has_expired:
            raise exceptions.AuthenticationFailed(_("This API key has expired."))
        if not api_key.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        now = timezone.now()
        if api_key.last_used_at is None or now - api_key.last_used_at >= LAST_USED_PRECISION:
            # A queryset update: no save() of the whole row, no race with a revocation.
            APIKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
            api_key.last_used_at = now
        return api_key.user, api_key


class APIKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """The schema's security scheme: `Authorization: Token <key>`."""

    target_class = APIKeyAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "An API key, sent as `Token <key>` (manage.py create_api_token, "
            "POST /api/v1/api-keys/, or the admin's API keys page).",
        }
