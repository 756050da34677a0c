"""Signal receivers of governance: the gate decision and the `run.finished` webhook when runs
finish, the audit of logins
and of every change to rights, whichever path made it, and the message of a sign-out.

Connected in `GovernanceConfig.ready()`. The `run_finished` receiver is the one message that
travels up the dependency line. The auth receivers close the gaps NetBox and
Wagtail users reported (netbox#11486, #17882; wagtail#14178): logins, failed logins and logouts,
group memberships, model and object permissions, and the superuser/staff/active flags are
audited even when they change outside `GrantRole`/`RevokeRole` (a shell, `createsuperuser`, a
data fix), and so is every change of a password hash, whichever view, command or script made it.
Inside those two actions the catch-all stays quiet, since they write their own entry.
"""

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import is_password_usable
from django.contrib.auth.models import Group, Permission
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.contrib.contenttypes.models import ContentType
from django.db.models import Q
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete, pre_save
from guardian.models import GroupObjectPermission, UserObjectPermission

from agents.models import Agent
from evaluations.models import Dataset, Run
from evaluations.signals import run_finished, schedule_failed
from governance.actions.decide_publish_request import DecidePublishRequest
from governance.choices import RequestState, WebhookEvent
from governance.models import PublishRequest, RoleGrant
from governance.people.roles import describe_scope, in_role_action, role_action, scoped_perms
from governance.webhooks import notify
from sherlock.core.audit import audit, current_actor

PRIVILEGE_FLAGS = ("is_superuser", "is_staff", "is_active")
WATCHED_USER_FIELDS = (*PRIVILEGE_FLAGS, "password")

# The catch-all entries below name as actor the signed-in user of the request that made the
# change (an Admin unticking `is_staff` in the user admin, resetting a password); a change made
# outside any request (a shell, a script, a command) has no actor Sherlock can know, and the
# entry says "system".


def decide_when_gate_runs_finish(sender, run_id, status, **kwargs):
    """A run finished: decide every evaluating request it belongs to (once all its runs are
    done). Idempotent, as the signal may come twice: the action compares and sets."""

    pending = PublishRequest.objects.filter(
        Q(runs=run_id) | Q(live_runs=run_id), state=RequestState.EVALUATING
    )
    for pk in pending.values_list("pk", flat=True).distinct():
        DecidePublishRequest(publish_request_id=pk).execute()


def notify_run_finished(sender, run_id, status, **kwargs):
    """The `run.finished` webhook event (governance.webhooks), with what a receiver needs to
    find the run: its agent version, dataset version, purpose and status."""

    run = (
        Run.objects.filter(pk=run_id)
        .values(
            "purpose",
            "agent_version__agent__slug",
            "agent_version__number",
            "dataset_version__dataset__slug",
            "dataset_version__number",
        )
        .first()
    )
    if run is None:
        return
    notify(
        WebhookEvent.RUN_FINISHED,
        {
            "run": run_id,
            "status": status,
            "purpose": run["purpose"],
            "agent": run["agent_version__agent__slug"],
            "agent_version": run["agent_version__number"],
            "dataset": run["dataset_version__dataset__slug"],
            "dataset_version": run["dataset_version__number"],
        },
    )


def audit_login(sender, request, user, **kwargs):
    audit("auth.user.login", actor=user, target=user)


def audit_login_failed(sender, credentials, request=None, **kwargs):
    # Django has already masked the password in `credentials`; only the name is kept.
    username = str(credentials.get("username", ""))[:150]
    audit("auth.user.login_failed", target=("auth.user", "", username))


def audit_logout(sender, request, user, **kwargs):
    if user is not None:
        audit("auth.user.logout", actor=user, target=user)


def say_signed_out(sender, request, user, **kwargs):
    """Signing out (the site's *Log out*, the admin's) lands on the sign-in page
    (`LOGOUT_REDIRECT_URL`) with this message, not on Django's "Thanks for spending some
    quality time" page. The message outlives the session flush that follows this signal: it is
    kept on the request and written to the message cookie with the response."""
    if request is not None and user is not None:
        messages.info(
            request, "You are signed out. Sign in again to use Sherlock.", fail_silently=True
        )


def audit_group_membership(sender, instance, action, reverse, pk_set, **kwargs):
    # A reverse clear (group.user_set.clear()) names its users only before it happens.
    wanted = ("post_add", "post_remove", "pre_clear" if reverse else "post_clear")
    if in_role_action() or action not in wanted:
        return
    if reverse:  # group.user_set.add(...): one entry per user
        users = (
            list(instance.user_set.all())
            if action == "pre_clear"
            else get_user_model().objects.filter(pk__in=pk_set or [])
        )
        groups = [instance.name]
    else:
        users = [instance]
        groups = sorted(Group.objects.filter(pk__in=pk_set or []).values_list("name", flat=True))
    verb = "add" if action == "post_add" else "remove"
    for user in users:
        audit(
            f"auth.membership.{verb}",
            actor=current_actor(),
            target=user,
            after={"groups": "all" if action == "post_clear" else groups},
        )


def audit_model_permissions(sender, instance, action, reverse, pk_set, model, **kwargs):
    if in_role_action() or action not in ("post_add", "post_remove", "post_clear"):
        return
    verb = "grant" if action == "post_add" else "revoke"
    if reverse:
        audit(
            f"auth.permission.{verb}",
            actor=current_actor(),
            target=("auth.permission", instance.pk, str(instance)),
            after={"holders": sorted(pk_set or [])},
        )
        return

    names = sorted(
        f"{p.content_type.app_label}.{p.codename}"
        for p in Permission.objects.filter(pk__in=pk_set or []).select_related("content_type")
    )
    audit(
        f"auth.permission.{verb}",
        actor=current_actor(),
        target=instance,
        after={"perms": names if action != "post_clear" else "all"},
    )


def _object_perm_entry(instance, verb):
    holder = getattr(instance, "user", None) or getattr(instance, "group", None)
    audit(
        f"auth.permission.{verb}",
        actor=current_actor(),
        target=holder,
        after={
            "perms": [
                f"{instance.permission.content_type.app_label}.{instance.permission.codename}"
            ],
            "object": {
                "type": f"{instance.content_type.app_label}.{instance.content_type.model}",
                "id": str(instance.object_pk),
            },
        },
    )


def audit_object_permission_added(sender, instance, created, **kwargs):
    if created and not in_role_action():
        _object_perm_entry(instance, "grant")


def audit_object_permission_removed(sender, instance, **kwargs):
    if not in_role_action():
        _object_perm_entry(instance, "revoke")


def remember_stored_user(sender, instance, update_fields=None, **kwargs):
    """Before a user is saved, read the stored flags and password hash it is about to replace
    (only the watched fields this save writes)."""
    fields = [
        name for name in WATCHED_USER_FIELDS if update_fields is None or name in set(update_fields)
    ]
    if not fields:
        return
    stored = sender.objects.filter(pk=instance.pk).values(*fields).first() if instance.pk else None
    # `_password` holds the raw password between `set_password()` and the save; Django clears
    # it before saving a hash it only upgraded at login. Only how it changed is kept.
    if not is_password_usable(instance.password):
        how = "unusable"
    elif getattr(instance, "_password", None) is not None:
        how = "set"
    else:
        how = "hash"
    instance._stored_before = (fields, stored, how)


def audit_user_changes(sender, instance, created, **kwargs):
    """The privilege flags (`auth.user.privileges`) and the password (`auth.user.password_change`:
    who changed whose, and how; never a hash) of a saved user, when they changed."""
    remembered = getattr(instance, "_stored_before", None)
    if remembered is None:
        return
    del instance._stored_before
    fields, stored, how = remembered
    flags = [name for name in fields if name in PRIVILEGE_FLAGS]
    # A new user is worth an entry only when it starts with privileges.
    if flags and (not created or instance.is_superuser or instance.is_staff):
        before = None if created or stored is None else {f: stored[f] for f in flags}
        after = {flag: getattr(instance, flag) for flag in flags}
        if before != after:
            audit(
                "auth.user.privileges",
                actor=current_actor(),
                target=instance,
                before=before,
                after=after,
            )
    if (
        "password" in fields
        and not created
        and stored is not None
        and stored["password"] != instance.password
    ):
        audit(
            "auth.user.password_change", actor=current_actor(), target=instance, after={"how": how}
        )


def revoke_grants_of_deleted_object(sender, instance, **kwargs):
    """An agent or a dataset is being deleted (in the deleting transaction, before its rows go):
    its `RoleGrant`s go with it (CASCADE), so each is audited as a `governance.role.revoke`
    (`after.cause` "deleted"), and guardian's object-permission rows for it, which a generic
    key does not cascade, are deleted. The grant holders' rows go quietly (their revoke entry
    names them); rows no grant explains (a verb given by hand, a group's) are deleted with the
    catch-all's `auth.permission.revoke` entry each. Nothing else lets an object's grants go
    unaudited, and no row is left for a later object that reuses the primary key."""

    content_type = ContentType.objects.get_for_model(instance)
    rows = {"content_type": content_type, "object_pk": str(instance.pk)}
    grants = list(RoleGrant.objects.on(instance).select_related("user").order_by("user_id", "role"))
    holders = {grant.user_id for grant in grants}
    held: dict[Any, Any] = {}
    for user_id, codename in UserObjectPermission.objects.filter(
        user_id__in=holders, **rows
    ).values_list("user_id", "permission__codename"):
        held.setdefault(user_id, set()).add(codename)
    actor = current_actor()
    covered: dict[Any, Any] = {}
    for grant in grants:
        verbs = held.get(grant.user_id, set()) & set(scoped_perms(grant.role, instance))
        covered.setdefault(grant.user_id, set()).update(verbs)
        audit(
            "governance.role.revoke",
            actor=actor,
            target=grant.user,
            before={"role": grant.role, "scope": describe_scope(instance)},
            after={"perms_removed": sorted(verbs), "cause": "deleted"},
            reason=f"The {instance._meta.verbose_name} {instance} was deleted.",
        )
    with role_action():
        for user_id, verbs in covered.items():
            UserObjectPermission.objects.filter(
                user_id=user_id, permission__codename__in=verbs, **rows
            ).delete()
    UserObjectPermission.objects.filter(**rows).delete()
    GroupObjectPermission.objects.filter(**rows).delete()


def notify_schedule_failed(sender, schedule_id, error, **kwargs):
    """The `schedule.failed` webhook event: a schedule fired but could not start its run."""

    notify(WebhookEvent.SCHEDULE_FAILED, {"schedule": schedule_id, "error": error})


def connect():
    user_model = get_user_model()
    run_finished.connect(decide_when_gate_runs_finish, sender=Run, dispatch_uid="gov-decide")
    run_finished.connect(notify_run_finished, sender=Run, dispatch_uid="gov-webhook-run")
    schedule_failed.connect(notify_schedule_failed, dispatch_uid="gov-webhook-schedule")
    user_logged_in.connect(audit_login, dispatch_uid="gov-login")
    user_login_failed.connect(audit_login_failed, dispatch_uid="gov-login-failed")
    user_logged_out.connect(audit_logout, dispatch_uid="gov-logout")
    user_logged_out.connect(say_signed_out, dispatch_uid="gov-logout-message")
    m2m_changed.connect(
        audit_group_membership, sender=user_model.groups.through, dispatch_uid="gov-groups"
    )
    m2m_changed.connect(
        audit_model_permissions,
        sender=user_model.user_permissions.through,
        dispatch_uid="gov-user-perms",
    )
    m2m_changed.connect(
        audit_model_permissions, sender=Group.permissions.through, dispatch_uid="gov-group-perms"
    )
    for model in (UserObjectPermission, GroupObjectPermission):
        post_save.connect(
            audit_object_permission_added, sender=model, dispatch_uid=f"gov-add-{model.__name__}"
        )
        post_delete.connect(
            audit_object_permission_removed, sender=model, dispatch_uid=f"gov-rm-{model.__name__}"
        )
    for governed in (Agent, Dataset):
        pre_delete.connect(
            revoke_grants_of_deleted_object,
            sender=governed,
            dispatch_uid=f"gov-grants-of-{governed.__name__}",
        )
    pre_save.connect(remember_stored_user, sender=user_model, dispatch_uid="gov-user-before")
    post_save.connect(audit_user_changes, sender=user_model, dispatch_uid="gov-user-after")
