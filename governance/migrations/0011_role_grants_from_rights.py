"""A `RoleGrant` for every role the rights held before this migration amount to.

Until now a role was read back from the rights it had left (group memberships, guardian object
permissions), and the verb sets of the roles overlap, so the same rights could be read as several
roles. This migration reads them once, by these rules (docs/governance.md, "How existing rights
became grants"):

- a membership of a role group is one global grant of that role;
- a user's object permissions on one agent or dataset are read against the audit log first: the
  `governance.role.grant` and `governance.role.revoke` entries about that user and that object,
  replayed in order, name the roles granted there and not revoked since; each counts when all of
  its verbs are still held. Where the log revoked a role and its verbs stayed (the defect: a
  revocation kept every verb another *inferred* role needed), the verbs that revoked role
  carried and no role the log still grants there explains are removed, as the Admin who revoked
  asked. Only a replayed revocation removes verbs this way: a logged grant beside verbs given
  from a shell says nothing about those verbs;
- the verbs left unexplained (none of the log, or beside what it explains) are read as the
  fewest whole roles: on an agent the Admin's full set (with `bypass_agent`) is one Admin grant,
  not Admin, Builder and Publisher; otherwise a Builder and a Publisher each when all of their
  verbs are held; on a dataset, where an Admin holds exactly an Editor's verbs, an Editor grant;
- verbs that still no grant explains (`view_agent` alone, a stray `bypass_agent`, a Builder's
  `build_agent` beside a Publisher's set) are removed: a right that `GET /role-grants/` does not
  show must not be kept ("no role is ever reported that was not granted", and no right
  held that no role explains).

Each user and object whose verbs were recorded as grants or removed is printed on a line of its
own (the first 50, then how many more), then the summary line.

Group object permissions are not roles (the role actions never wrote them) and are left alone.
The lines are written when there was anything to read, so an empty database (a new install,
the test database) migrates quietly. Reversing drops the records, keeping the rights that
remain (the removed ones are named in the output, not restored).

This migration was corrected in place (a review found it removed every unexplained verb when
the log had any role entry about the user and object, and kept verbs no grant explains): it is
new in this release and on no user's database yet (the last release is main before it), so no
installed database has run the first version.
"""

import sys

from django.conf import settings
from django.db import migrations
from django.utils import timezone

# The verbs of a scoped grant when this migration was written (governance.people.roles.OBJECT_PERMS),
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
MIGRATED = "Recorded from the rights held when role grants became records."


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
    """({(user pk, scope key): {role: the entry that granted it}}, {(user pk, scope key): {the
    roles whose last entry there is a revocation}}) from the role entries of the audit log,
    oldest first; the scope key is "global" or (model name, object pk as text)."""
    entry_model = apps.get_model("governance", "AuditEntry")
    granted, revoked = {}, {}
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
        gone = revoked.setdefault((entry.target_id, key), set())
        if grant:
            roles[role] = entry
            gone.discard(role)
        else:
            roles.pop(role, None)
            gone.add(role)
    return granted, revoked


def explain(kind, held, logged, revoked):
    """Read one user's `held` verbs on one object: (roles, {role: logged?}, verbs a logged
    revocation left, verbs no grant explains). `logged` are the roles the replayed log grants
    there, `revoked` those it revoked last."""
    roles = {role for role in logged if role in ROLES and verbs(role, kind) <= held}
    explained = set().union(*(verbs(role, kind) for role in roles))
    revoked_verbs = set().union(*(verbs(role, kind) for role in revoked if role in ROLES))
    left_by_revoke = (held - explained) & revoked_verbs
    rest = held - left_by_revoke
    for role in fewest_roles(kind, rest) - roles:
        if verbs(role, kind) - explained:  # only a role that explains a verb not yet explained
            roles.add(role)
            explained |= verbs(role, kind)
    stray = rest - explained
    return roles, left_by_revoke, stray


SHOWN = 50  # per-user lines printed before the rest are only counted


def record_grants(apps, schema_editor, out=None):
    """Create the grants and remove the verbs no grant explains; return the summary line, and
    write it to `out` after one line per user and object changed (at most `SHOWN`)."""
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    grant_model = apps.get_model("governance", "RoleGrant")
    object_perm_model = apps.get_model("guardian", "UserObjectPermission")
    label = f"{user_model._meta.app_label}.{user_model._meta.model_name}"
    history, revocations = replay_log(apps, label)
    names = dict(user_model.objects.values_list("pk", "username"))  # auth.User (historical)
    now = timezone.now()
    counts = {"global": 0, "agent": 0, "dataset": 0, "removed": 0, "stray": 0, "stray_sets": 0}
    grants = []
    lines = []

    def grant(user_id, role, kind, obj_id, entry):
        by = entry.actor_id if entry is not None and entry.actor_id in names else None
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
    global_roles = {}
    for user_id, role in memberships.values_list("user_id", "group__name"):
        seen = True
        entry = history.get((str(user_id), "global"), {}).get(role)
        grant(user_id, role, "global", None, entry)
        global_roles.setdefault(user_id, []).append(f"{role} ({'log' if entry else 'no log'})")
    for user_id, roles in sorted(global_roles.items(), key=lambda item: names[item[0]]):
        lines.append(f"{names[user_id]}, global: recorded {', '.join(sorted(roles))}")

    for kind, (app_label, model_name) in KINDS.items():
        managed = {p for role in ROLES for p in verbs(role, kind)}
        slugs = {
            str(pk): slug
            for pk, slug in apps.get_model(app_label, model_name).objects.values_list("pk", "slug")
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
        for (user_id, object_pk), rows in sorted(
            held.items(), key=lambda item: (names[item[0][0]], slugs.get(item[0][1], ""))
        ):
            if object_pk not in slugs:  # the object is gone; guardian left its rows behind
                continue
            key = (str(user_id), (kind, object_pk))
            logged = history.get(key, {})
            roles, left_by_revoke, stray = explain(
                kind, set(rows), logged, revocations.get(key, set())
            )
            for role in sorted(roles):
                grant(user_id, role, kind, int(object_pk), logged.get(role))
            if left_by_revoke or stray:
                object_perm_model.objects.filter(
                    pk__in=[rows[c] for c in left_by_revoke | stray]
                ).delete()
            counts["removed"] += len(left_by_revoke)
            counts["stray"] += len(stray)
            counts["stray_sets"] += bool(stray)
            said = []
            if roles:
                said.append(
                    "recorded "
                    + ", ".join(
                        f"{role} ({'log' if role in logged else 'no log'})"
                        for role in sorted(roles)
                    )
                )
            if left_by_revoke:
                said.append(f"removed {', '.join(sorted(left_by_revoke))} (a logged revocation)")
            if stray:
                said.append(f"removed {', '.join(sorted(stray))} (no grant explains them)")
            lines.append(f"{names[user_id]}, {kind} {slugs[object_pk]}: {'; '.join(said)}")

    grant_model.objects.bulk_create(grants)
    line = (
        f"Role grants recorded: {counts['global']} global, {counts['agent']} on agents, "
        f"{counts['dataset']} on datasets; {counts['removed']} permissions removed that a "
        f"logged revocation had left; {counts['stray']} permissions removed that no grant "
        f"explains, from {counts['stray_sets']} user-object permission sets."
    )
    if seen and out is not None:
        for each in lines[:SHOWN]:
            out.write(f"  {each}\n")
        if len(lines) > SHOWN:
            out.write(f"  ... and {len(lines) - SHOWN} more users and objects.\n")
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
