"""Every refused change to people and sign-in is audited, as every other refusal is: the People
API and pages, invitations, deactivation, reactivation, roles and the single sign-on mapping
write `governance.<noun>.refused` with the verb for each refused request."""

import pytest

from governance.models import AuditEntry
from tests.support.factories import api

NOT_ADMINS = ["editor", "builder", "publisher", "outsider"]
DENIED = {"code": "permission_denied"}


def refusals():
    return list(
        AuditEntry.objects.filter(action__endswith=".refused")
        .order_by("sequence")
        .values_list("action", "after")
    )


@pytest.mark.parametrize("persona", NOT_ADMINS)
def test_refused_people_api_calls_are_audited(request, persona, editor):
    user = request.getfixturevalue(persona)
    client = api(user)
    calls = [
        ("/api/v1/people/", {"username": "mallory"}, "invite"),
        (f"/api/v1/people/{editor.pk}/deactivate/", None, "deactivate"),
        (f"/api/v1/people/{editor.pk}/reactivate/", None, "reactivate"),
    ]
    for url, body, verb in calls:
        before = len(refusals())
        answer = client.post(url, body, format="json")
        assert answer.status_code == 403, url
        added = refusals()[before:]
        assert added == [("governance.user.refused", {"verb": verb, **DENIED})], url


@pytest.mark.parametrize("persona", NOT_ADMINS)
def test_refused_people_and_sso_page_posts_are_audited(client, request, persona, editor):
    user = request.getfixturevalue(persona)
    client.force_login(user)
    posts = [
        ("/people/", {"username": "mallory"}, ("user", "invite")),
        (f"/people/{editor.pk}/", {"role": "Admin", "reason": "x"}, ("role", "grant")),
        (f"/people/{editor.pk}/", {"role": "Editor", "revoke": "1"}, ("role", "revoke")),
        (f"/people/{editor.pk}/deactivate/", {}, ("user", "deactivate")),
        (f"/people/{editor.pk}/reactivate/", {}, ("user", "reactivate")),
        (f"/people/{editor.pk}/invite-link/", {}, ("user", "invite")),
        ("/people/sso/", {"provider": "oidc", "configure": "1"}, ("sso", "configure")),
        ("/people/sso/", {"provider": "oidc", "group": "g", "role": "Admin"}, ("sso", "map")),
        ("/people/sso/", {"provider": "oidc", "unmap": "1", "rule": "1"}, ("sso", "unmap")),
    ]
    for url, body, (noun, verb) in posts:
        before = len(refusals())
        assert client.post(url, body).status_code == 403, url
        added = refusals()[before:]
        assert added == [(f"governance.{noun}.refused", {"verb": verb, **DENIED})], url
    editor.refresh_from_db()
    assert editor.is_active


def test_a_refused_read_is_answered_without_an_entry(client, builder):
    client.force_login(builder)
    assert client.get("/people/").status_code == 403
    assert api(builder).get("/api/v1/people/").status_code == 403
    assert refusals() == []


def test_the_admins_roles_address_changes_nothing_and_leads_to_people(client, builder, editor):
    client.force_login(builder)
    url = f"/admin/auth/user/{editor.pk}/roles/"
    answer = client.post(url, {"role": "Admin", "grant": "1"})
    assert answer.status_code == 302 and not editor.role_grants.filter(role="Admin").exists()
    refused = client.post(f"/people/{editor.pk}/", {"role": "Admin", "grant": "1"})
    assert refused.status_code == 403
    assert ("governance.role.refused", {"verb": "grant", **DENIED}) in refusals()
