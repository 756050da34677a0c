"""The session store (`SESSION_ENGINE`): Django's database store, where a session cookie holding
a NUL character is no session, as a key too short already is (Django's own
`_validate_session_key`): the request is anonymous. PostgreSQL stores no NUL in text, so looking
such a key up was a `DataError`, a 500 on every page and endpoint (issue 22)."""

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore


class SessionStore(DatabaseSessionStore):
    def _validate_session_key(self, key):
        return bool(super()._validate_session_key(key)) and "\x00" not in key
