"""The admin's API keys page: an Admin issues a key to anyone (shown once, in the message) and
revokes anyone's; another staff user sees and issues only their own; nobody edits or deletes a
key. The browser test (tests/browser/test_api_key_admin.py) looks at the same page."""

import re

from governance.models import APIKey, AuditEntry
from tests.support.governance import api_key, key_client

ADD = "/admin/governance/apikey/add/"
LIST = "/admin/governance/apikey/"


def issued_secret(response):
    messages = [str(m) for m in response.context["messages"]]
    (message,) = [m for m in messages if "cannot be shown again" in m]
    return re.search(r"<code>([A-Za-z0-9]{8}\.[A-Za-z0-9]{32})</code>", message).group(1)


def test_an_admin_issues_a_key_to_a_builder_shown_once(logged_in, admin_user, builder):
    client = logged_in(admin_user)
    body = {"user": builder.pk, "name": "nightly", "days": 7}
    response = client.post(ADD, body, follow=True)
    secret = issued_secret(response)
    key = APIKey.objects.get(user=builder)
    assert key.issued_by == admin_user and key.name == "nightly"
    assert key_client(secret).get("/api/v1/agents/").status_code == 200
    assert secret not in client.get(LIST).content.decode()
    assert secret not in client.get(f"{LIST}{key.pk}/change/").content.decode()
    entry = AuditEntry.objects.get(action="governance.apikey.create")
    assert entry.actor_id == admin_user.pk and entry.after["days"] == 7


def test_more_days_than_the_maximum_is_an_error_on_the_field(
    logged_in, admin_user, builder, settings
):
    settings.SHERLOCK_API_KEY_MAX_DAYS = 30
    response = logged_in(admin_user).post(ADD, {"user": builder.pk, "name": "n", "days": 31})
    assert response.status_code == 200
    assert "1 to 30 days" in str(response.context["adminform"].form.errors["days"])
    assert not APIKey.objects.exists()


def test_a_staff_user_issues_only_their_own_keys(logged_in, builder, publisher):
    client = logged_in(builder)
    api_key(publisher, name="publisher's")
    response = client.post(ADD, {"user": publisher.pk, "name": "mine"}, follow=True)
    issued_secret(response)
    assert APIKey.objects.get(name="mine").user == builder  # the user field is not offered
    listing = client.get(LIST).content.decode()
    assert "mine" in listing and "publisher&#x27;s" not in listing


def test_an_admin_revokes_a_key_from_the_list(logged_in, admin_user, builder):
    key, secret = api_key(builder)
    body = {"action": "revoke_keys", "_selected_action": [key.pk]}
    logged_in(admin_user).post(LIST, body, follow=True)
    key.refresh_from_db()
    assert key.revoked and key.revoked_by == admin_user
    assert key_client(secret).get("/api/v1/agents/").status_code == 401


def test_a_staff_user_cannot_revoke_someone_elses_key(logged_in, builder, publisher):
    key, _ = api_key(publisher)
    body = {"action": "revoke_keys", "_selected_action": [key.pk]}
    logged_in(builder).post(LIST, body, follow=True)  # not in their changelist: ignored
    key.refresh_from_db()
    assert not key.revoked


def test_nobody_edits_or_deletes_a_key(logged_in, admin_user, builder):
    key, _ = api_key(builder)
    client = logged_in(admin_user)
    client.post(f"{LIST}{key.pk}/change/", {"name": "renamed"})
    assert APIKey.objects.get(pk=key.pk).name == "test client"
    assert client.post(f"{LIST}{key.pk}/delete/", {"post": "yes"}).status_code == 403
    assert APIKey.objects.filter(pk=key.pk).exists()


def test_the_librarys_own_key_screen_is_not_mounted(logged_in, admin_user):
    response = logged_in(admin_user).get("/admin/rest_framework_api_key/apikey/")
    assert response.status_code == 404
