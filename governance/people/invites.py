"""Invitation links: signed, expiring, one-time (People; docs/sso.md "People").

The token is Django's signing (`TimestampSigner` through `signing.dumps`, salted for this use,
under SECRET_KEY) of the user's id and a fingerprint of what accepting changes: the password
hash and the last sign-in. So a link expires after SHERLOCK_INVITE_HOURS, and works once:
setting the password changes the fingerprint, and so does a sign-in (an account already in
use is no invitation); a deactivation ends every link sent before it, for good. No e-mail
server is assumed: the Admin copies the link; when EMAIL_HOST is set, it is also sent to the
person's address.
"""

import time
from datetime import UTC, datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.urls import reverse
from django.utils.crypto import constant_time_compare, salted_hmac

from governance.models import AuditEntry

SALT = "sherlock.invite"


def _fingerprint(user):
    value = f"{user.pk}|{user.password}|{user.last_login}|{user.is_active}"
    return salted_hmac(SALT, value).hexdigest()[:32]


def make_token(user):
    issued = round(time.time(), 6)
    return signing.dumps(
        {"u": user.pk, "f": _fingerprint(user), "t": issued}, salt=SALT, compress=True
    )


def _deactivated_since(user, issued):
    """Whether `user` was deactivated at or after `issued` (seconds since the epoch): a link
    sent before a deactivation stays dead after a reactivation."""

    return AuditEntry.objects.filter(
        action="governance.user.deactivate",
        target_type=f"{user._meta.app_label}.{user._meta.model_name}",
        target_id=str(user.pk),
        at__gte=datetime.fromtimestamp(issued, tz=UTC),
    ).exists()


def user_for_token(token):
    """The invited user the token names, or None when it is forged, expired or used."""
    try:
        data = signing.loads(token, salt=SALT, max_age=settings.SHERLOCK_INVITE_HOURS * 3600)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("u"), int):
        return None
    user = get_user_model().objects.filter(pk=data["u"], is_active=True).first()
    if user is None or not constant_time_compare(str(data.get("f")), _fingerprint(user)):
        return None
    issued = data.get("t")
    if _deactivated_since(user, issued if isinstance(issued, int | float) else 0):
        return None
    return user


def invite_url(request, token):
    """The absolute sign-up link of `token`, on the host the Admin is using."""
    return request.build_absolute_uri(reverse("people:join", args=[token]))
