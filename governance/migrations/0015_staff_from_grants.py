"""`is_staff` becomes what the role grants say (governance.people.roles.derive_staff).

Before, the admin's "Staff status" was a switch an Admin had to tick by hand, and a teammate
granted a role without it could not sign in to the admin. From now on every grant and
revocation derives it; this migration derives it once for the accounts as they are: a user with
a grant (or a superuser) becomes staff, a staff user with no grant stops being staff. Each
change is printed, one line per user (the first 50, then how many more).
"""

from django.db import migrations

SHOWN = 50


def derive(apps, schema_editor, out=print):
    user_model = apps.get_model("auth", "User")
    grant_model = apps.get_model("governance", "RoleGrant")
    holders = set(grant_model.objects.values_list("user_id", flat=True).distinct())
    changed = []
    for user in user_model.objects.order_by("pk").only(
        "pk", "username", "is_staff", "is_superuser"
    ):
        staff = user.is_superuser or user.pk in holders
        if user.is_staff != staff:
            user_model.objects.filter(pk=user.pk).update(is_staff=staff)
            changed.append(f"{user.username}: is_staff {user.is_staff} -> {staff}")
    for line in changed[:SHOWN]:
        out(f"  staff from grants: {line}")
    if len(changed) > SHOWN:
        out(f"  ... and {len(changed) - SHOWN} more")
    if changed:
        out(f"  staff from grants: {len(changed)} account(s) changed")


class Migration(migrations.Migration):
    dependencies = [("governance", "0014_people_sso")]

    operations = [migrations.RunPython(derive, migrations.RunPython.noop)]
