"""`Authorization: Token <key>` against the hashed API keys (`governance.models.APIKey`).

The header is the one DRF's plaintext tokens used, so callers keep working; only what is stored
changed. The key's prefix finds the row and the library checks the whole key against its hash
in constant time; an expired or revoked key, or a deactivated user's, answers 401 saying which.

A read is answered from what this process verified a moment ago: the key, its user and the
user's global permissions are remembered for `SHERLOCK_API_AUTH_CACHE_SECONDS`, and a later read
with the same key costs one small statement re-reading what must never be stale (revoked,
expired, active, superuser, last use due). So revocation, expiry and deactivation answer 401
from the next request on; only a role change may lag, by those seconds, in other processes. A
verb loads everything afresh. An OTLP export call is answered like a read
(`ExportKeyAuthentication`): spans are telemetry, not a governed change, and an exporter fleet
sends many calls a second under one key. docs/governance.md, "API keys".
"""

import copy
import hashlib
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connections, router
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.db.models.functions import Now
from django.db.models.signals import m2m_changed
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.permissions import SAFE_METHODS

from governance.models import APIKey
from governance.models.api_keys import LAST_USED_PRECISION

PREFIX_LENGTH = APIKey._meta.get_field("prefix").max_length
# Keys remembered at most per process; past that the memory starts again (a fleet of CI clients
# uses a few dozen keys, so this bounds memory against a caller cycling through many).
REMEMBERED_MAX = 1000

INVALID = _("Invalid token.")
REVOKED = _("This API key has been revoked.")
EXPIRED = _("This API key has expired.")
INACTIVE = _("User inactive or deleted.")


class Verified:
    """A key this process verified: its row and its user (with the permission caches the
    requests fill), handed out as copies so that no request sees another's attributes."""

    __slots__ = ("api_key", "user", "at")

    def __init__(self, api_key, user):
        self.api_key, self.user, self.at = api_key, user, time.monotonic()


# sha256 of the presented key -> Verified. A digest, so the secret is not kept in memory.
_verified: dict[Any, Any] = {}
# database alias -> (SQL of the re-check, index of the key's id among its parameters, params)
_statements: dict[Any, Any] = {}
SENTINEL = "sentinel-id"  # a key id no row has, to find its place among the parameters


def forget_all(**kwargs):
    """Drop every remembered key: a role changed (a signal receiver, hence `**kwargs`)."""
    _verified.clear()


def _recheck_queryset(pk):
    """What a remembered key must re-read on every request, as flags computed by the database
    (so that no value needs converting): revoked, expired, the user's active and superuser
    flags, and whether the last use is due to be written."""
    now = Now()
    return (
        APIKey.objects.filter(pk=pk)
        .order_by()
        .values_list(
            "revoked",
            ExpressionWrapper(Q(expiry_date__lte=now), output_field=BooleanField()),
            "user__is_active",
            "user__is_superuser",
            ExpressionWrapper(
                Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - LAST_USED_PRECISION),
                output_field=BooleanField(),
            ),
        )
    )


def recheck(pk):
    """The flags of `_recheck_queryset(pk)`, or None when the row is gone: the ORM's statement,
    compiled once per process and database (compiling it cost four times running it)."""
    alias = router.db_for_read(APIKey)
    statement = _statements.get(alias)
    if statement is None:
        sql, params = _recheck_queryset(SENTINEL).query.sql_with_params()
        places = [i for i, value in enumerate(params) if value == SENTINEL]
        if len(places) != 1:  # pragma: no cover - the ORM changed its compilation
            raise RuntimeError("the key's id is not one parameter of the re-check")
        statement = _statements[alias] = (sql, places[0], list(params))
    sql, place, params = statement
    params = list(params)
    params[place] = pk
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def remember_seconds():
    return settings.SHERLOCK_API_AUTH_CACHE_SECONDS


class APIKeyAuthentication(authentication.TokenAuthentication):
    """DRF's `TokenAuthentication` (its header parsing and its 401 answers), looking the key up
    among the hashed `APIKey` rows instead of plaintext tokens. `request.auth` is the key.
    Reads use what this process verified a moment ago (the module's docstring)."""

    keyword = "Token"
    remembering = False
    # Whether writes, too, use what this process verified a moment ago (the module docstring).
    remember_writes = False

    def authenticate(self, request):
        # DRF makes one authenticator per request, so this is the request's own.
        remembered = self.remember_writes or request.method in SAFE_METHODS
        self.remembering = remembered and remember_seconds() > 0
        return super().authenticate(request)

    def authenticate_credentials(self, key):
        digest = hashlib.sha256(key.encode()).hexdigest()
        if self.remembering:
            known = _verified.get(digest)
            if known is not None and time.monotonic() - known.at < remember_seconds():
                credentials = self.remembered(digest, known)
                if credentials is not None:
                    return credentials
        api_key = self.load(key)
        if self.remembering:
            if len(_verified) >= REMEMBERED_MAX:
                _verified.clear()
            _verified[digest] = Verified(api_key, api_key.user)
        return api_key.user, api_key

    def load(self, key):
        """The key's row and its user from the database, checked: the full verification."""
        prefix = key.partition(".")[0][:PREFIX_LENGTH]
        api_key = APIKey.objects.select_related("user").filter(prefix=prefix).first()
        if api_key is None or not api_key.is_valid(key):
            raise exceptions.AuthenticationFailed(INVALID)
        if api_key.revoked:
            raise exceptions.AuthenticationFailed(REVOKED)
        if api_key.has_expired:
            raise exceptions.AuthenticationFailed(EXPIRED)
        if not api_key.user.is_active:
            raise exceptions.AuthenticationFailed(INACTIVE)
        now = timezone.now()
        if api_key.last_used_at is None or now - api_key.last_used_at >= LAST_USED_PRECISION:
            # A queryset update: no save() of the whole row, no race with a revocation.
            APIKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
            api_key.last_used_at = now
        return api_key

    def remembered(self, digest, known):
        """(user, key) of a remembered key after its re-check, or None to load it afresh (the
        user's superuser flag changed); 401 when it was revoked, expired or deactivated."""
        flags = recheck(known.api_key.pk)
        if flags is None or any(flags[:2]) or not flags[2]:
            _verified.pop(digest, None)
            if flags is None:
                raise exceptions.AuthenticationFailed(INVALID)
            revoked, expired = flags[:2]
            raise exceptions.AuthenticationFailed(
                REVOKED if revoked else EXPIRED if expired else INACTIVE
            )
        if bool(flags[3]) != known.user.is_superuser:
            _verified.pop(digest, None)
            return None
        if flags[4]:
            now = timezone.now()
            APIKey.objects.filter(pk=known.api_key.pk).update(last_used_at=now)
            known.api_key.last_used_at = now
        return copy.copy(known.user), copy.copy(known.api_key)


class ExportKeyAuthentication(APIKeyAuthentication):
    """The OTLP receiver's: an export call uses a key this process verified a moment ago, as a
    read does, re-checked by one statement (revoked, expired, user deactivated: 401 from the
    next call on; a role taken away in another process: within
    `SHERLOCK_API_AUTH_CACHE_SECONDS`). The module's docstring says why."""

    remember_writes = True


# A role granted or revoked in this process is seen by its next request (other processes: within
# SHERLOCK_API_AUTH_CACHE_SECONDS).
for _through in (
    get_user_model().groups.through,
    get_user_model().user_permissions.through,
    Group.permissions.through,
):
    m2m_changed.connect(
        forget_all, sender=_through, dispatch_uid=f"api-keys-{_through._meta.label}"
    )


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
