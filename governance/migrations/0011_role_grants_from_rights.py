"""Issue 22 point 2: a `RoleGrant` for every role the rights held before this migration amount to.

Until now a role was read back from the rights it had left (group memberships, guardian object
permissions), and the verb sets of the roles overlap, so the same rights could be read as several
roles. This migration reads them once, by these rules (docs/governance.md, "How existing rights
became grants"):

- a membership of a role group is one global grant of that role;
- a user's object permissions on one agent or dataset are read against the audit log first: the
  `governance.role.grant` and `governance.role.revoke` entries about that user and that object,
  replayed in order, name the roles granted there and not revoked since; each counts when all of
  its verbs are still held. Where the log revoked a role and its verbs stayed (the defect: a
  revocation kept every verb another *inferred* role needed), those verbs are removed, as the
  Admin who revoked asked;
- where the log says nothing about that user and object (rights given by a shell or a script),
  the verbs are read as the fewest roles that explain them: on an agent, the Admin's full set
  (with `bypass_agent`) is one Admin grant, not Admin, Builder and Publisher; otherwise a Builder
  and a Publisher each when all of their verbs are held; on a dataset, where an Admin holds
  exactly an Editor's verbs, an Editor grant. Verbs that make no whole role are left as they
  are, and counted: the next role change of that user on that object derives them from the
  grants, and so removes them.

Group object permissions are not roles (the role actions never wrote them) and are left alone.
The summary line is written when there was anything to read, so an empty database (a new
install, the test database) migrates quietly. Reversing drops the records, keeping the rights.
"""

import sys

from django.conf import settings
from django.db import migrations
from django.utils import timezone

# The verbs of a scoped grant when this migration was written (governance.roles.OBJECT_PERMS),
# frozen here: a later change of the roles must not change how old rights were read.
OBJECT_PERMS = {
    "Editor": {"dataset": ["view_dataset", "change_dataset", "edit_dataset"]},
    "Builder": {"agent": ["view_agent", "change_agent", "build_agent"]},
    "Publisher": {"agent": ["view_agent", "publish_agent"]},
    "Admin": {
        "agent": ["view_agent", "change_agent", "build_agent", "publish_agent", "bypass_agent"],
        "dataset": ["view_dataset", "change_dataset", "edit_dataset"],
    },
}
ROLES = ("Editor", "Builder", "Publisher", "Admin")
KINDS = {"agent": ("agents", "Agent"), "dataset": ("evaluations", "Dataset")}
MIGRATED = "Recorded from the rights held when role grants became records (issue 22)."


def verbs(role, kind):
    return set(OBJECT_PERMS[role].get(kind) or ())


def fewest_roles(kind, held):
    """The roles `held` verbs amount to when the audit log says nothing about them."""
    if kind == "dataset":
        return {"Editor"} if verbs("Editor", kind) <= held else set()
    if verbs("Admin", kind) <= held:
        return {"Admin"}
    return {role for role in ("Builder", "Publisher") if verbs(role, kind) <= held}


def replay_log(apps, user_model_label):
    """{(user pk, scope key): {role: the entry that granted it}} from the role entries of the
    audit log, oldest first; the scope key is "global" or (model name, object pk as text)."""
    entry_model = apps.get_model("governance", "AuditEntry")
    granted = {}
    entries = entry_model.objects.filter(
        action__in=["governance.role.grant", "governance.role.revoke"],
        target_type=user_model_label,
    ).order_by("sequence")
    for entry in entries.iterator():
        grant = entry.action == "governance.role.grant"
        side = (entry.after if grant else entry.before) or {}
        role, scope = side.get("role"), side.get("scope")
        if scope == "global":
            key = "global"
        elif isinstance(scope, dict) and str(scope.get("type", "")).count(".") == 1:
            key = (scope["type"].split(".", 1)[1], str(scope.get("id")))
        else:
            continue
        roles = granted.setdefault((entry.target_id, key), {})
        if grant:
            roles[role] = entry
        else:
            roles.pop(role, None)
    return granted


def record_grants(apps, schema_editor, out=None):
    """Create the grants; return (and write to `out`) the summary line."""
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    grant_model = apps.get_model("governance", "RoleGrant")
    object_perm_model = apps.get_model("guardian", "UserObjectPermission")
    label = f"{user_model._meta.app_label}.{user_model._meta.model_name}"
    history = replay_log(apps, label)
    user_ids = set(user_model.objects.values_list("pk", flat=True))
    now = timezone.now()
    counts = {"global": 0, "agent": 0, "dataset": 0, "removed": 0, "partial": 0}
    grants = []

    def grant(user_id, role, kind, obj_id, entry):
        by = entry.actor_id if entry is not None and entry.actor_id in user_ids else None
        grants.append(
            grant_model(
                user_id=user_id,
                role=role,
                scope=kind,
                agent_id=obj_id if kind == "agent" else None,
                dataset_id=obj_id if kind == "dataset" else None,
                granted_by_id=by,
                granted_at=entry.at if entry is not None else now,
                reason=(entry.reason if entry is not None else "") or MIGRATED,
            )
        )
        counts[kind] += 1

    memberships = user_model.groups.through.objects.filter(group__name__in=ROLES)
    seen = False
    for user_id, role in memberships.values_list("user_id", "group__name"):
        seen = True
        entry = history.get((str(user_id), "global"), {}).get(role)
        grant(user_id, role, "global", None, entry)

    for kind, (app_label, model_name) in KINDS.items():
        managed = {p for role in ROLES for p in verbs(role, kind)}
        existing = {
            str(pk)
            for pk in apps.get_model(app_label, model_name).objects.values_list("pk", flat=True)
        }
        perms = object_perm_model.objects.filter(
            content_type__app_label=app_label,
            content_type__model=kind,
            permission__codename__in=managed,
        ).values_list("pk", "user_id", "object_pk", "permission__codename")
        held = {}  # (user pk, object pk) -> {codename: row pk}
        for pk, user_id, object_pk, codename in perms:
            seen = True
            held.setdefault((user_id, str(object_pk)), {})[codename] = pk
        for (user_id, object_pk), rows in held.items():
            if object_pk not in existing:  # the object is gone; guardian left its rows behind
                continue
            codenames = set(rows)
            logged = history.get((str(user_id), (kind, object_pk)))
            if logged is not None:
                roles = {
                    role for role in logged if role in ROLES and verbs(role, kind) <= codenames
                }
            else:
                roles = fewest_roles(kind, codenames)
            for role in sorted(roles):
                grant(user_id, role, kind, int(object_pk), (logged or {}).get(role))
            left = codenames - set().union(*(verbs(role, kind) for role in roles))
            if left and logged is not None:
                object_perm_model.objects.filter(pk__in=[rows[c] for c in left]).delete()
                counts["removed"] += len(left)
            elif left:
                counts["partial"] += 1

    grant_model.objects.bulk_create(grants)
    line = (
        f"Role grants recorded: {counts['global']} global, {counts['agent']} on agents, "
        f"{counts['dataset']} on datasets; {counts['removed']} permissions removed that a "
        f"logged revocation had left; {counts['partial']} user-object permission sets that "
        "make no whole role left as they are."
    )
    if seen and out is not None:
        out.write(f"  {line}\n")
    return line


def forwards(apps, schema_editor):
    record_grants(apps, schema_editor, out=sys.stdout)


def backwards(apps, schema_editor):
    apps.get_model("governance", "RoleGrant").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0010_role_grants"),
        ("guardian", "0003_remove_groupobjectpermission_guardian_gr_content_ae6aec_idx_and_more"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
