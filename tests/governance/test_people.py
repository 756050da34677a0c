"""People: a global Admin invites a person (a one-time, expiring sign-up
link), grants and revokes their roles, deactivates and reactivates them, on the People page and
through the API; every change is an action, audited. Editors, Builders, Publishers and outsiders
may do none of it, as pages or API. Roles decide `is_staff`: nobody ticks a hidden switch."""

import time

import pytest
from django.contrib.auth import get_user_model
from django.core import signing

from governance.actions.accept_invite import AcceptInvite
from governance.actions.deactivate_user import DeactivateUser
from governance.actions.grant_role import GrantRole
from governance.actions.invite_user import InviteUser
from governance.actions.revoke_role import RevokeRole
from governance.models import AuditEntry
from governance.people.invites import make_token, user_for_token
from sherlock.core.errors import ActionConflict, ActionDenied
from tests.support.factories import api

User = get_user_model()
NOT_ADMINS = ["editor", "builder", "publisher", "outsider"]


def invite(admin, username="dana", **extra):
    return InviteUser(acting_user=admin, username=username, **extra).execute()


# --- the role matrix: pages and API --------------------------------------------------------------


def test_an_admin_sees_the_people_page_with_last_sign_in(client, admin_user, editor):
    client.force_login(admin_user)
    body = client.get("/people/").content.decode()
    assert 'data-user="editor"' in body and "never" in body
    assert 'href="/people/"' in body  # the nav's People link, for Admins


@pytest.mark.parametrize("persona", NOT_ADMINS)
def test_no_other_role_may_open_or_use_the_people_pages(client, request, persona, editor):
    user = request.getfixturevalue(persona)
    client.force_login(user)
    assert client.get("/people/").status_code == 403
    assert client.post("/people/", {"username": "mallory"}).status_code == 403
    assert client.get(f"/people/{editor.pk}/").status_code == 403
    assert client.post(f"/people/{editor.pk}/deactivate/").status_code == 403
    assert client.get("/people/sso/").status_code == 403
    assert 'href="/people/"' not in client.get("/runs/").content.decode()
    assert not User.objects.filter(username="mallory").exists()
    editor.refresh_from_db()
    assert editor.is_active


@pytest.mark.parametrize("persona", NOT_ADMINS)
def test_no_other_role_may_use_the_people_api(request, persona, editor):
    user = request.getfixturevalue(persona)
    assert api(user).get("/api/v1/people/").status_code == 403
    answer = api(user).post("/api/v1/people/", {"username": "mallory"}, format="json")
    assert answer.status_code == 403 and answer.json()["code"]
    assert api(user).post(f"/api/v1/people/{editor.pk}/deactivate/").status_code == 403
    assert not User.objects.filter(username="mallory").exists()


def test_an_admin_invites_through_the_api_and_gets_the_link_once(admin_user, editor):
    answer = api(admin_user).post(
        "/api/v1/people/", {"username": "dana", "email": "dana@example.com"}, format="json"
    )
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["sign_in"] == ["invited"] and "/people/join/" in body["invite_url"]
    listed = api(admin_user).get("/api/v1/people/").json()["results"]
    assert {p["username"] for p in listed} >= {"dana", "editor"}
    assert "invite_url" not in listed[0]
    again = api(admin_user).post("/api/v1/people/", {"username": "DANA"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "exists"


def test_the_api_refuses_an_unknown_field_and_a_bad_email(admin_user):
    bad = api(admin_user).post("/api/v1/people/", {"username": "x", "admin": True}, format="json")
    assert bad.status_code == 400
    bad = api(admin_user).post(
        "/api/v1/people/", {"username": "x", "email": "not-mail"}, format="json"
    )
    assert bad.status_code == 400 and bad.json()["field"] == "email"
    assert not User.objects.filter(username="x").exists()


# --- invitations ---------------------------------------------------------------------------------


def test_an_invitation_creates_a_person_without_password_and_is_audited(admin_user):
    user, token = invite(admin_user, email="dana@example.com")
    assert not user.has_usable_password() and user.is_active and not user.is_staff
    entry = AuditEntry.objects.get(action="governance.user.invite")
    assert entry.actor_id == admin_user.pk and entry.target_id == str(user.pk)
    assert token not in entry.canonical()
    assert user_for_token(token) == user


def test_the_link_works_once(admin_user):
    user, token = invite(admin_user)
    AcceptInvite(token=token, password="a long enough password").execute()
    user.refresh_from_db()
    assert user.check_password("a long enough password")
    assert AuditEntry.objects.filter(action="governance.user.join", actor=user).exists()
    with pytest.raises(ActionConflict, match="not valid any more"):
        AcceptInvite(token=token, password="another long password").execute()
    user.refresh_from_db()
    assert user.check_password("a long enough password")


def test_the_link_expires(admin_user, settings, monkeypatch):
    user, _ = invite(admin_user)
    settings.SHERLOCK_INVITE_HOURS = 2
    made_at = time.time() - 3 * 3600
    monkeypatch.setattr(signing.time, "time", lambda: made_at)
    old = make_token(user)
    monkeypatch.undo()
    assert user_for_token(old) is None
    assert user_for_token(make_token(user)) == user


def test_a_forged_or_foreign_token_names_nobody(admin_user, editor):
    user, token = invite(admin_user)
    assert user_for_token(token[:-2] + "xx") is None
    assert (
        user_for_token(signing.dumps({"u": editor.pk, "f": "0" * 32}, salt="sherlock.invite"))
        is None
    )
    # A password-reset style token of another salt is no invitation.
    assert user_for_token(signing.dumps({"u": user.pk}, salt="other")) is None


def test_the_join_page_sets_the_password_then_the_person_signs_in(client, admin_user):
    user, token = invite(admin_user)
    GrantRole(acting_user=admin_user, user=user, role="Editor").execute()
    page = client.get(f"/people/join/{token}/")
    assert page.status_code == 200 and "Welcome to Sherlock, dana" in page.content.decode()
    answer = client.post(
        f"/people/join/{token}/", {"password1": "a long enough password", "password2": "x"}
    )
    assert "The two passwords differ." in answer.content.decode()
    answer = client.post(
        f"/people/join/{token}/",
        {"password1": "a long enough password", "password2": "a long enough password"},
    )
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")
    assert client.get(f"/people/join/{token}/").status_code == 410
    signed = client.post(
        "/accounts/login/", {"login": "dana", "password": "a long enough password"}
    )
    assert signed.status_code == 302
    assert client.get("/admin/").status_code == 200  # an Editor uses the admin: staff by grant


def test_a_short_password_is_refused_and_the_link_kept(client, admin_user):
    user, token = invite(admin_user)
    answer = client.post(f"/people/join/{token}/", {"password1": "short", "password2": "short"})
    assert "too short" in answer.content.decode()
    assert user_for_token(token) == user


def test_the_people_page_invites_and_shows_the_link(client, admin_user):
    client.force_login(admin_user)
    answer = client.post("/people/", {"username": "erin", "email": "", "role": "Builder"})
    body = answer.content.decode()
    assert answer.status_code == 200 and 'id="invite-url"' in body
    erin = User.objects.get(username="erin")
    assert erin.role_grants.get().role == "Builder" and erin.is_staff
    refused = client.post("/people/", {"username": "erin"})
    assert refused.status_code == 400 and "erin already exists." in refused.content.decode()


# --- roles, staff, deactivation ----------------------------------------------------------------


def test_roles_decide_staff(admin_user):
    user, _ = invite(admin_user)
    GrantRole(acting_user=admin_user, user=user, role="Publisher").execute()
    user.refresh_from_db()
    assert user.is_staff
    entry = AuditEntry.objects.filter(action="auth.user.privileges", target_id=str(user.pk)).last()
    assert entry.after == {"is_staff": True} and entry.actor_id is None
    RevokeRole(acting_user=admin_user, user=user, role="Publisher").execute()
    user.refresh_from_db()
    assert not user.is_staff


def test_a_refused_grant_is_shown_again_as_chosen_with_why(client, admin_user, editor):
    from tests.support import factories

    bot, data = factories.agent("billing-bot"), factories.dataset("billing-qa")
    client.force_login(admin_user)
    posted = {"role": "Builder", "agent": bot.pk, "dataset": data.pk, "reason": "pilot"}
    answer = client.post(f"/people/{editor.pk}/", {**posted, "grant": "1"})
    page = answer.content.decode()
    assert answer.status_code == 400 and "Choose an agent or a dataset, not both." in page
    assert '<option value="Builder" selected>' in page and 'value="pilot"' in page
    assert f'<option value="{bot.pk}" selected>billing-bot</option>' in page
    assert f'<option value="{data.pk}" selected>billing-qa</option>' in page
    assert not editor.role_grants.filter(role="Builder").exists()


def test_the_person_page_grants_and_revokes_a_scoped_role(client, admin_user, editor):
    from tests.support import factories

    bot = factories.agent("billing-bot")
    client.force_login(admin_user)
    client.post(f"/people/{editor.pk}/", {"role": "Builder", "agent": bot.pk, "grant": "1"})
    assert editor.role_grants.filter(role="Builder", agent__slug="billing-bot").exists()
    page = client.get(f"/people/{editor.pk}/").content.decode()
    assert "Roles changed." in page and "agent billing-bot" in page
    assert f'name="agent" value="{bot.pk}"' in page  # the revoke button names what it takes
    client.post(f"/people/{editor.pk}/", {"role": "Builder", "agent": bot.pk, "revoke": "1"})
    assert not editor.role_grants.filter(role="Builder").exists()
    refused = client.post(
        f"/people/{editor.pk}/", {"role": "Editor", "agent": bot.pk, "grant": "1"}, follow=True
    )
    assert "An Editor cannot be granted for an agent." in refused.content.decode()


def test_deactivating_stops_sign_in_and_keeps_the_roles(client, admin_user, editor, password):
    client.force_login(admin_user)
    client.post(f"/people/{editor.pk}/deactivate/")
    editor.refresh_from_db()
    assert not editor.is_active and editor.role_grants.exists()
    entry = AuditEntry.objects.get(action="governance.user.deactivate")
    assert entry.actor_id == admin_user.pk and entry.after == {"is_active": False}
    client.logout()
    answer = client.post("/accounts/login/", {"login": "editor", "password": password})
    assert "_auth_user_id" not in client.session
    # Told the account is deactivated and whom to ask, never that the password is wrong.
    told = answer.content.decode()
    assert answer.status_code == 403 and "This account is deactivated" in told
    assert f"ask {admin_user.username}" in told and "password" not in told.split("deactivated")[0]
    wrong = client.post("/accounts/login/", {"login": "editor", "password": "not it at all"})
    assert "deactivated" not in wrong.content.decode()  # a wrong password learns nothing
    client.force_login(admin_user)
    client.post(f"/people/{editor.pk}/reactivate/")
    editor.refresh_from_db()
    assert editor.is_active


def test_an_admin_cannot_deactivate_themselves(admin_user):
    with pytest.raises(ActionConflict, match="yourself"):
        DeactivateUser(acting_user=admin_user, user=admin_user).execute()
    assert AuditEntry.objects.filter(action="governance.user.refused").exists()


def test_a_builder_cannot_invite(builder):
    with pytest.raises(ActionDenied):
        invite(builder)
    entry = AuditEntry.objects.get(action="governance.user.refused")
    assert entry.after == {"verb": "invite", "code": "permission_denied"}


def test_the_migration_derives_staff_from_the_grants_once(db, editor, outsider):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("governance.migrations.0015_staff_from_grants")
    User.objects.filter(pk=editor.pk).update(is_staff=False)  # granted, never ticked
    lines = []
    migration.derive(apps, None, out=lines.append)
    editor.refresh_from_db()
    outsider.refresh_from_db()
    assert editor.is_staff and not outsider.is_staff  # the outsider holds no grant
    assert "  staff from grants: editor: is_staff False -> True" in lines


def test_the_people_page_costs_the_same_queries_for_more_people(
    client, admin_user, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(admin_user)

    def count():
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/people/").status_code == 200
        return len(queries)

    few = count()
    for n in range(6):
        user, _ = invite(admin_user, username=f"p{n}")
        GrantRole(acting_user=admin_user, user=user, role="Editor").execute()
    assert count() == few


@pytest.mark.parametrize(
    "method,url,data",
    [
        ("get", "/people/99999999999999999999/", None),
        ("get", "/people/join/xyz/", None),
        ("post", "/people/1/nope/", None),
        ("post", "/people/sso/", {"provider": "corp", "unmap": "1", "rule": "abc"}),
        ("post", "/people/sso/", {"provider": "corp", "unmap": "1", "rule": "9" * 30}),
    ],
)
def test_bad_addresses_and_ids_answer_4xx_not_500(client, admin_user, method, url, data):
    client.force_login(admin_user)
    answer = getattr(client, method)(url, data or {})
    assert 400 <= answer.status_code < 500


# --- the scope pickers (/pick/), never a list of every agent -----------------------------------


@pytest.mark.parametrize("page", ["person", "sso"])
def test_the_role_forms_pick_the_agent_and_dataset_as_typed(
    client, settings, admin_user, editor, page
):
    from tests.support import factories

    settings.SHERLOCK_OIDC_APPS = [
        {"provider_id": "corp", "name": "Corp", "client_id": "c", "settings": {}}
    ]
    for n in range(30):
        factories.agent(f"bot-{n:02}")
        factories.dataset(f"set-{n:02}")
    client.force_login(admin_user)
    url = {
        "person": f"/people/{editor.pk}/",
        "sso": "/people/sso/",
    }[page]
    body = client.get(url).content.decode()
    for kind in ("agent", "dataset"):
        assert f'data-ajax--url="/pick/{kind}/"' in body
    assert "sherlock-picker" in body and "sherlock/picker.js" in body
    assert "bot-07" not in body and "set-07" not in body  # nothing listed until typed


def test_the_pickers_find_agents_and_datasets_for_an_admin(client, admin_user, editor):
    from tests.support import factories

    bot = factories.agent("billing-bot", name="Billing")
    factories.agent("support-bot")
    basics = factories.dataset("billing-qa")
    client.force_login(admin_user)
    found = {}
    for field, term in (("agent", "billing"), ("dataset", "billing")):
        answer = client.get(f"/pick/{field}/", {"term": term})
        assert answer.status_code == 200
        found[field] = answer.json()["results"]
    assert found["agent"] == [{"id": bot.pk, "text": str(bot)}]
    assert found["dataset"] == [{"id": basics.pk, "text": str(basics)}]
    # What the picker posts is what the form takes.
    client.post(f"/people/{editor.pk}/", {"role": "Editor", "dataset": basics.pk, "grant": "1"})
    assert editor.role_grants.filter(role="Editor", dataset=basics).exists()


def test_deactivation_ends_sessions_and_links_for_good(client, admin_user, editor):
    """Reactivating a person asks for a fresh sign-in and a fresh link: neither the sessions
    opened before the deactivation nor the invitation sent before it come back."""
    from django.test import Client

    browser = Client()
    browser.force_login(editor)
    assert browser.get("/runs/").status_code == 200
    dana, token = invite(admin_user)
    assert client.get(f"/people/join/{token}/").status_code == 200

    from governance.actions.reactivate_user import ReactivateUser

    DeactivateUser(acting_user=admin_user, user=editor).execute()
    DeactivateUser(acting_user=admin_user, user=dana).execute()
    ReactivateUser(acting_user=admin_user, user=editor).execute()
    ReactivateUser(acting_user=admin_user, user=dana).execute()

    signed_out = browser.get("/runs/")
    assert signed_out.status_code == 302 and "/accounts/login/" in signed_out["Location"]
    assert client.get(f"/people/join/{token}/").status_code == 410
    fresh = make_token(User.objects.get(pk=dana.pk))
    assert client.get(f"/people/join/{fresh}/").status_code == 200


def test_a_deactivated_persons_open_session_ends(client, admin_user, editor, password):
    """Signed in by password (allauth's backend), then deactivated: the next page asks for a
    sign-in again; the session does not outlive the account."""
    signed = client.post("/accounts/login/", {"login": "editor", "password": password})
    assert signed.status_code == 302 and client.session.get("_auth_user_id") == str(editor.pk)
    assert client.get("/runs/").status_code == 200
    DeactivateUser(acting_user=admin_user, user=editor).execute()
    answer = client.get("/runs/")
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")
