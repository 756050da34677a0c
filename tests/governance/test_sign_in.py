"""Sherlock's sign-in: one page titled Sherlock for every role,
the admin's login leading to it; password sign-in can be switched off (SSO only); a single
sign-on answer that does not carry this sign-in's nonce is refused; the provider settings
insist on HTTPS except on loopback."""

import pytest
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.models import SocialAccount, SocialLogin
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from governance.actions.invite_user import InviteUser
from governance.models import AuditEntry
from governance.sso.adapter import SocialAccountAdapter
from sherlock import settings as sherlock_settings
from sherlock.core.errors import ActionConflict


def test_the_admin_login_leads_to_the_sherlock_sign_in_page(client):
    answer = client.get("/admin/login/?next=/admin/")
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/?next=/admin/"
    page = client.get(answer["Location"]).content.decode()
    assert "<title>Sign in · Sherlock</title>" in page and "Django administration" not in page
    assert 'name="next" value="/admin/"' in page


def test_any_role_signs_in_and_reaches_the_admin_its_roles_use(client, publisher, password):
    answer = client.post(
        "/accounts/login/?next=/admin/", {"login": "publisher", "password": password}
    )
    assert answer.status_code == 302 and answer["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_a_person_without_a_role_signs_in_to_the_pages_but_not_the_admin(
    client, outsider, password
):
    outsider.is_staff = False
    outsider.save(update_fields=["is_staff"])
    client.post("/accounts/login/", {"login": "outsider", "password": password})
    assert client.get("/runs/").status_code == 200
    assert client.get("/admin/")["Location"].startswith("/admin/login/")


def test_a_signed_in_person_without_a_role_is_told_why_the_admin_is_closed_not_looped(
    client, outsider, password
):
    outsider.is_staff = False  # as derived for a person with no grant (the factory's is staff)
    outsider.save(update_fields=["is_staff"])
    client.post("/accounts/login/", {"login": "outsider", "password": password})
    answer = client.get("/admin/login/?next=/admin/", follow=True)
    # Not on to the sign-in page, which would send a signed-in person back to /admin/.
    assert answer.redirect_chain == [] and answer.status_code == 403
    page = answer.content.decode()
    assert "The admin is for people whose roles use it" in page
    assert "an Admin grants roles on the People page" in page
    assert "Back to the runs</a></p>" in page  # and no link of its own back into the admin
    assert "Back to the runs</a></p>" in client.get("/governance/audit/").content.decode()  # 404


def test_nobody_signs_up_alone(client):
    answer = client.get("/accounts/signup/")
    assert "No sign-up" in answer.content.decode()


def test_password_sign_in_can_be_switched_off(client, settings, admin_user, publisher, password):
    settings.SHERLOCK_PASSWORD_LOGIN = False
    settings.SOCIALACCOUNT_ONLY = True
    page = client.get("/accounts/login/").content.decode()
    assert 'id="id_password"' not in page
    answer = client.post("/accounts/login/", {"login": "publisher", "password": password})
    assert answer.status_code == 403 and "_auth_user_id" not in client.session
    with pytest.raises(ActionConflict, match="Password sign-in is off"):
        InviteUser(acting_user=admin_user, username="dana").execute()


def _login(nonce_sent, nonce_back):
    account = SocialAccount(
        provider="corp", uid="s-1", extra_data={"id_token": {"nonce": nonce_back}}
    )
    login = SocialLogin(account=account)
    login.state = {"nonce": nonce_sent} if nonce_sent else {}
    return login


@pytest.mark.parametrize("sent,back", [("n-1", "n-2"), ("n-1", None), (None, None)])
def test_an_answer_without_this_sign_ins_nonce_is_refused(db, sent, back):
    request = RequestFactory().get("/accounts/oidc/corp/login/callback/")
    with pytest.raises(ImmediateHttpResponse) as refused:
        SocialAccountAdapter().pre_social_login(request, _login(sent, back))
    assert refused.value.response.status_code == 403
    entry = AuditEntry.objects.get(action="governance.sso.refused")
    assert entry.after["code"] == "nonce"


def test_the_matching_nonce_passes(db):
    request = RequestFactory().get("/accounts/oidc/corp/login/callback/")
    SocialAccountAdapter().pre_social_login(request, _login("n-1", "n-1"))  # no mapping: open
    assert not AuditEntry.objects.filter(action="governance.sso.refused").exists()


def _env(monkeypatch, url, client_id="sherlock"):
    monkeypatch.setenv("X_OIDC", "corp")
    monkeypatch.setenv("SHERLOCK_OIDC_CORP_SERVER_URL", url)
    monkeypatch.setenv("SHERLOCK_OIDC_CORP_CLIENT_ID", client_id)


@pytest.mark.parametrize(
    "url", ["https://idp.example/realms/team", "http://127.0.0.1:9400", "http://[::1]:9400"]
)
def test_a_provider_is_reached_over_https_or_on_loopback(monkeypatch, url):
    _env(monkeypatch, url)
    (app,) = sherlock_settings._oidc_apps("X_OIDC")
    assert app["provider_id"] == "corp" and app["settings"]["server_url"] == url
    assert app["settings"]["oauth_pkce_enabled"] is True


@pytest.mark.parametrize("url", ["http://idp.example", "http://10.0.0.5:8080"])
def test_plain_http_to_a_remote_provider_stops_start_up(monkeypatch, url):
    _env(monkeypatch, url)
    with pytest.raises(ImproperlyConfigured, match="HTTPS"):
        sherlock_settings._oidc_apps("X_OIDC")


def test_a_provider_without_client_id_stops_start_up(monkeypatch):
    _env(monkeypatch, "https://idp.example", client_id="")
    with pytest.raises(ImproperlyConfigured, match="CLIENT_ID"):
        sherlock_settings._oidc_apps("X_OIDC")


def test_no_provider_no_sso_button(client):
    assert (
        'form method="post" action="/accounts/oidc/'
        not in client.get("/accounts/login/").content.decode()
    )
