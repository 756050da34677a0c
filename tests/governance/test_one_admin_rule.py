"""Who is a global Admin is decided once (`sherlock.core.permissions.is_global_admin`: an active
superuser or a member of the Admin role's group) and read by the actions, the navigation and
the "ask an Admin" lists alike: a person given `auth.change_user` by hand, outside the group,
is not offered the People page, is not named as the Admin to ask, and every Admin action
refuses them, as before."""

from django.contrib.auth.models import Permission

from governance.choices import Role
from governance.people.roles import is_global_admin
from sherlock.core.permissions import ADMIN_GROUP, who_grants_roles
from sherlock.core.permissions import is_global_admin as kernel_rule
from tests.support import factories


def test_the_admin_groups_name_is_the_roles(db):
    assert Role.ADMIN.value == ADMIN_GROUP


def test_a_hand_given_permission_makes_no_admin(client, db):
    admin = factories.user("ada", role="Admin")
    lookalike = factories.user("mallory", role="Editor")
    lookalike.user_permissions.add(Permission.objects.get(codename="change_user"))
    lookalike = type(lookalike).objects.get(pk=lookalike.pk)  # a fresh permission cache
    assert lookalike.has_perm("auth.change_user")  # what the navigation used to ask

    assert is_global_admin(admin) and kernel_rule(admin)
    assert not is_global_admin(lookalike) and not kernel_rule(lookalike)
    assert who_grants_roles() == ["ada"]

    client.force_login(lookalike)
    page = client.get("/runs/").content.decode()
    assert 'href="/people/"' not in page
    assert "mallory" not in page.split("Ask", 1)[-1]  # never named as the Admin to ask
    assert client.get("/people/").status_code in (403, 404)
    client.force_login(admin)
    assert 'href="/people/"' in client.get("/runs/").content.decode()


def test_an_inactive_admin_is_no_admin(db):
    admin = factories.user("ada", role="Admin")
    admin.is_active = False
    admin.save(update_fields=["is_active"])
    assert not is_global_admin(admin) and who_grants_roles() == []
