"""The session store (`SESSION_ENGINE`): Django's database store, where a session cookie holding
a NUL character is no session, as a key too short already is (Django's own
`_validate_session_key`): the request is anonymous. PostgreSQL stores no NUL in text, so looking
such a key up was a `DataError`, a 500 on every page and endpoint."""

from typing import Any

from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.contrib.sessions.models import Session
from django.utils import timezone


class SessionStore(DatabaseSessionStore):
    def _validate_session_key(self, key: str | None) -> bool:
        valid = super()._validate_session_key(key)  # type: ignore[misc]  # Django's, unstubbed
        return bool(valid) and key is not None and "\x00" not in key


def end_sessions_of(user: Any) -> int:
    """Delete every stored session signed in as `user`: a deactivated person's browsers are
    signed out for good, so reactivating them asks for a fresh sign-in rather than reviving
    the sessions opened before. The database store keeps no index by user, so the sessions
    still valid are read once each; this runs on a deactivation, not on a page."""

    store = SessionStore()
    doomed = [
        session.pk
        for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
        if str(store.decode(session.session_data).get(SESSION_KEY)) == str(user.pk)
    ]
    Session.objects.filter(pk__in=doomed).delete()
    return len(doomed)
