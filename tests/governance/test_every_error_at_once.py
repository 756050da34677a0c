"""A form shows all its errors at once: the governance verbs behind the
policy, webhook, API key, invitation and single sign-on forms report every bad field of one
submit, and the admin's forms show the fields' own errors beside the action's."""

import pytest
from django.urls import reverse

from governance.actions.create_api_key import CreateAPIKey
from governance.actions.create_webhook import CreateWebhook
from governance.actions.invite_user import InviteUser
from governance.actions.map_sso_group import MapSSOGroup
from governance.actions.update_policy import UpdatePolicy
from governance.models import APIKey, PublishingPolicy, WebhookEndpoint
from sherlock.core.errors import InvalidFields


def fields_of(exc_info):
    return {error.field for error in exc_info.value.errors}


def test_a_policy_with_two_bad_fields_is_refused_with_both(admin_user, policy):
    with pytest.raises(InvalidFields) as refused:
        UpdatePolicy(
            acting_user=admin_user,
            policy=policy,
            changes={"min_case_pass_rate": 2, "bypass_expiry_hours": 0},
        ).execute()
    assert fields_of(refused) == {"min_case_pass_rate", "bypass_expiry_hours"}


def test_the_policy_admin_shows_the_fields_errors_and_the_actions_together(
    client, admin_user, policy
):
    client.force_login(admin_user)
    url = f"/admin/governance/publishingpolicy/{policy.pk}/change/"
    form = client.get(url).context["adminform"].form
    data = {name: value for name, value in form.initial.items() if value is not None}
    data = {k: v for k, v in data.items() if k not in ("agent", "scope_key", "version")}
    data.update(
        min_case_pass_rate="2",  # the form's own validation
        bypass_expiry_hours="0",  # the action's rule
        gate_datasets=[d.pk for d in policy.gate_datasets.all()],
    )
    answer = client.post(url, data)
    errors = answer.context["adminform"].form.errors
    assert {"min_case_pass_rate", "bypass_expiry_hours"} <= set(errors)
    assert "at least one hour" in str(errors["bypass_expiry_hours"])
    assert PublishingPolicy.objects.current("global").version == policy.version


def test_a_webhook_with_a_bad_url_and_no_event_is_refused_with_both(admin_user):
    with pytest.raises(InvalidFields) as refused:
        CreateWebhook(acting_user=admin_user, url="ftp://hooks.example.com/x", events=[]).execute()
    assert fields_of(refused) == {"url", "events"}
    assert not WebhookEndpoint.objects.exists()


def test_the_webhook_admin_shows_the_url_and_the_events_errors_together(client, admin_user):
    client.force_login(admin_user)
    answer = client.post(
        reverse("admin:governance_webhookendpoint_add"),
        {"url": "ftp://hooks.example.com/x", "active": "on"},  # no event ticked
    )
    errors = answer.context["adminform"].form.errors
    assert set(errors) == {"url", "events"}
    assert "http or https" in str(errors["url"])


def test_an_api_key_with_no_name_and_too_many_days_is_refused_with_both(
    admin_user, builder, settings
):
    settings.SHERLOCK_API_KEY_MAX_DAYS = 30
    with pytest.raises(InvalidFields) as refused:
        CreateAPIKey(acting_user=admin_user, user=builder, name=" ", days=31).execute()
    assert fields_of(refused) == {"name", "days"}
    assert not APIKey.objects.exists()


def test_an_invitation_with_a_bad_username_and_e_mail_shows_both(client, admin_user):
    with pytest.raises(InvalidFields) as refused:
        InviteUser(acting_user=admin_user, username="a b", email="nope").execute()
    assert fields_of(refused) == {"username", "email"}
    client.force_login(admin_user)
    answer = client.post("/people/", {"username": "a b", "email": "nope"})
    assert answer.status_code == 400
    errors = answer.context["form"].errors
    assert set(errors) == {"username", "email"}
    body = answer.content.decode()
    assert "letters, digits" in body and "is not an e-mail address" in body


def test_a_mapping_with_no_group_and_an_admin_without_bypass_says_both(settings, admin_user):
    settings.SHERLOCK_OIDC_APPS = [
        {"provider_id": "corp", "name": "Corp", "client_id": "c", "settings": {}}
    ]
    with pytest.raises(InvalidFields) as refused:
        MapSSOGroup(acting_user=admin_user, provider_id="corp", group="", role="Admin").execute()
    assert fields_of(refused) == {"group", "allow_bypass"}


def test_the_mapping_page_says_the_forms_and_the_mappings_problems_together(
    client, settings, admin_user
):
    settings.SHERLOCK_OIDC_APPS = [
        {"provider_id": "corp", "name": "Corp", "client_id": "c", "settings": {}}
    ]
    client.force_login(admin_user)
    answer = client.post(
        "/people/sso/",
        {"provider": "corp", "group": "", "role": "Admin", "map": "1"},
        follow=True,
    )
    page = answer.content.decode()
    assert "group: This field is required." in page  # the form's
    assert "may approve bypasses" in page  # the mapping's rule for an Admin
