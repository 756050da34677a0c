"""Changes to a user made outside the role actions name who made them: a password set or reset
by any path is audited (never its hash), the privilege flags edited in the user admin carry the
Admin who edited them, and only a superuser may set the password of an account with Admin rights
in the admin, so the second Admin of a bypass is never a colleague whose password was just
reset."""

import pytest
from django.contrib.auth.models import Group

from governance.actions.approve_bypass import ApproveBypass
from governance.models import AuditEntry
from tests.support import factories
from tests.support.governance import grant_on

NEW_PASSWORD = "a brand new passphrase for the test"


def set_password_in_admin(client, target, password=NEW_PASSWORD):
    return client.post(
        f"/admin/auth/user/{target.pk}/password/",
        {"password1": password, "password2": password, "usable_password": "true"},
    )


def latest(action, user):
    return AuditEntry.objects.filter(action=action, target_id=str(user.pk)).latest("sequence")


def password_entries(user):
    return AuditEntry.objects.filter(action="auth.user.password_change", target_id=str(user.pk))


def test_an_admin_resetting_a_publishers_password_in_the_admin_is_audited(
    client, admin_user, publisher
):
    client.force_login(admin_user)
    response = set_password_in_admin(client, publisher)
    assert response.status_code == 302
    publisher.refresh_from_db()
    assert publisher.check_password(NEW_PASSWORD)
    entry = password_entries(publisher).get()
    assert (entry.actor_id, entry.target_type) == (admin_user.pk, "auth.user")
    assert entry.after == {"how": "set"}
    assert NEW_PASSWORD not in entry.canonical() and publisher.password not in entry.canonical()


@pytest.mark.parametrize("target_kind", ["global Admin", "Admin of one agent", "superuser"])
def test_a_non_superuser_admin_cannot_set_the_password_of_an_account_with_admin_rights(
    target_kind, client, admin_user, agent
):
    if target_kind == "global Admin":
        target = factories.user("other-admin", role="Admin")
    elif target_kind == "Admin of one agent":
        target = grant_on(factories.user("agent-admin"), "Admin", agent)
    else:
        target = factories.user("root", is_superuser=True)
    client.force_login(admin_user)
    assert client.get(f"/admin/auth/user/{target.pk}/password/").status_code == 403
    assert set_password_in_admin(client, target).status_code == 403
    target.refresh_from_db()
    assert target.check_password(factories.PASSWORD)
    assert not password_entries(target).exists()


def test_an_inactive_admin_is_protected_too(client, admin_user):
    # Reset the password, then reactivate: two steps that would each look harmless.
    target = factories.user("dormant-admin", role="Admin", is_active=False)
    client.force_login(admin_user)
    assert set_password_in_admin(client, target).status_code == 403


def test_a_superuser_may_set_an_admins_password_and_it_is_audited(client, admin_user):
    root = factories.user("root", is_superuser=True)
    client.force_login(root)
    assert set_password_in_admin(client, admin_user).status_code == 302
    assert password_entries(admin_user).get().actor_id == root.pk


def test_the_reset_then_approve_attack_is_refused_and_leaves_a_trail(
    client, admin_user, policy, blocked_request
):
    """Admin A may not take over Admin B to approve A's own bypass; the attempt is on record."""
    from governance.actions.request_bypass import RequestBypass
    from tests.support.governance import REASON

    policy.bypass_requires_second_admin = True
    policy.save(update_fields=["bypass_requires_second_admin"])
    colleague = factories.user("colleague", role="Admin")
    bypass = RequestBypass(
        acting_user=admin_user, publish_request=blocked_request, reason=REASON
    ).execute()
    client.force_login(admin_user)
    assert set_password_in_admin(client, colleague).status_code == 403
    assert not client.login(username="colleague", password=NEW_PASSWORD)
    bypass.refresh_from_db()
    assert bypass.state == "requested"
    # Had a superuser reset it, the entry would sit right before the approval, with the actor.
    colleague.set_password(NEW_PASSWORD)
    colleague.save()
    ApproveBypass(acting_user=colleague, bypass=bypass).execute()
    codes = list(AuditEntry.objects.order_by("sequence").values_list("action", flat=True))
    assert codes[-2:] == ["auth.user.password_change", "governance.bypass.approve"]


def test_changing_ones_own_password_is_audited_with_oneself_as_actor(client, publisher, password):
    client.force_login(publisher)
    response = client.post(
        "/admin/password_change/",
        {"old_password": password, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    entry = password_entries(publisher).get()
    assert entry.actor_id == publisher.pk and entry.after == {"how": "set"}


def test_a_password_set_in_a_shell_is_audited_without_an_actor(publisher):
    publisher.set_password(NEW_PASSWORD)
    publisher.save()
    entry = password_entries(publisher).get()
    assert entry.actor_id is None and entry.after == {"how": "set"}


def test_disabling_password_login_is_audited(publisher):
    publisher.set_unusable_password()
    publisher.save(update_fields=["password"])
    assert password_entries(publisher).get().after == {"how": "unusable"}


def test_a_hash_upgraded_at_login_is_told_apart_from_a_new_password(
    settings, client, publisher, password
):
    # The user's hash was made with MD5 (the tests' fast hasher); a stronger preferred hasher
    # makes Django re-hash the same password when it is next checked.
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.ScryptPasswordHasher",
        "django.contrib.auth.hashers.MD5PasswordHasher",
    ]
    assert client.login(username="publisher", password=password)
    entry = password_entries(publisher).get()
    assert entry.actor_id is None and entry.after == {"how": "hash"}


def test_saves_that_do_not_touch_the_password_write_no_password_entry(client, publisher):
    client.force_login(publisher)  # saves last_login
    publisher.first_name = "Pat"
    publisher.save()
    assert not password_entries(publisher).exists()


def test_is_staff_cannot_be_unticked_in_the_user_admin(client, admin_user, publisher):
    # Derived from the role grants (governance.people.roles.derive_staff), read-only in the admin.
    client.force_login(admin_user)
    response = client.post(
        f"/admin/auth/user/{publisher.pk}/change/",
        {
            "username": "publisher",
            "is_active": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert response.status_code == 302
    publisher.refresh_from_db()
    assert publisher.is_staff


def test_deactivating_a_user_in_the_admin_names_the_admin(client, admin_user, publisher):
    client.force_login(admin_user)
    client.post(
        f"/admin/auth/user/{publisher.pk}/change/",
        {
            "username": "publisher",
            "is_staff": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    entry = latest("auth.user.privileges", publisher)
    assert entry.actor_id == admin_user.pk and entry.after["is_active"] is False


def test_a_flag_left_out_of_update_fields_is_not_reported_as_changed(publisher):
    mark = latest("auth.user.privileges", publisher).sequence  # its creation as staff
    publisher.is_staff = False  # changed in memory, but not written by this save
    publisher.save(update_fields=["is_active"])
    assert latest("auth.user.privileges", publisher).sequence == mark


def test_a_membership_changed_by_hand_still_has_no_actor(publisher):
    publisher.groups.add(Group.objects.get(name="Builder"))
    entry = latest("auth.membership.add", publisher)
    assert entry.after == {"groups": ["Builder"]} and entry.actor_id is None
