"""Logins, failed logins and logouts are audited with the request id and the client address;
the address is REMOTE_ADDR unless the peer is a configured trusted proxy, and a raw
X-Forwarded-For from anyone else is ignored."""

import pytest

from governance.models import AuditEntry


def login(client, username, password, **headers):
    """Sherlock's sign-in page (allauth's login view; the admin's login URL leads there)."""
    return client.post(
        "/accounts/login/?next=/admin/",
        {"login": username, "password": password},
        **headers,
    )


def test_a_login_is_audited_with_the_request_id_and_address(client, publisher, password):
    login(client, "publisher", password, HTTP_X_REQUEST_ID="req-42", REMOTE_ADDR="10.1.2.3")
    entry = AuditEntry.objects.get(action="auth.user.login")
    assert entry.actor_id == publisher.pk
    assert (entry.request_id, entry.ip) == ("req-42", "10.1.2.3")


def test_a_failed_login_is_audited_without_the_password(client, publisher):
    login(client, "publisher", "wrong-password", REMOTE_ADDR="10.9.9.9")
    entry = AuditEntry.objects.get(action="auth.user.login_failed")
    assert entry.actor_id is None and entry.target_repr == "publisher"
    assert entry.ip == "10.9.9.9"
    assert "wrong-password" not in entry.canonical()


def test_a_logout_is_audited(client, publisher):
    client.force_login(publisher)
    client.post("/admin/logout/")
    assert AuditEntry.objects.get(action="auth.user.logout").actor_id == publisher.pk


def test_a_raw_forwarded_for_header_is_not_believed(client, publisher, password):
    login(client, "publisher", password, REMOTE_ADDR="10.1.2.3", HTTP_X_FORWARDED_FOR="6.6.6.6")
    assert AuditEntry.objects.get(action="auth.user.login").ip == "10.1.2.3"


@pytest.mark.parametrize(
    "forwarded,expected",
    [
        ("198.51.100.7", "198.51.100.7"),
        # The left-most hop is whatever the client wrote; the right-most untrusted one is real.
        ("6.6.6.6, 198.51.100.7", "198.51.100.7"),
        ("198.51.100.7, 10.0.0.2", "198.51.100.7"),
    ],
)
def test_behind_a_trusted_proxy_the_forwarded_client_is_recorded(
    forwarded, expected, settings, client, publisher, password
):
    settings.SHERLOCK_TRUSTED_PROXIES = ["10.0.0.0/24"]
    login(client, "publisher", password, REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
    assert AuditEntry.objects.get(action="auth.user.login").ip == expected
