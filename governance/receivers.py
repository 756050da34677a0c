"""Signal receivers of governance: the gate decision when runs finish, and the audit of logins
and of every change to rights, whichever path made it.

Connected in `GovernanceConfig.ready()`. The `run_finished` receiver is the one message that
travels up the dependency line (DESIGN section 3). The auth receivers close the gaps NetBox and
Wagtail users reported (netbox#11486, #17882; wagtail#14178): logins, failed logins and logouts,
group memberships, model and object permissions, and the superuser/staff/active flags are
audited even when they change outside `GrantRole`/`RevokeRole` (a shell, `createsuperuser`, a
data fix). Inside those two actions the catch-all stays quiet, since they write their own entry.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from guardian.models import GroupObjectPermission, UserObjectPermission

from agents.audit import audit
from evaluations.models import Run
from evaluations.signals import run_finished
from governance.choices import RequestState
from governance.roles import in_role_action

PRIVILEGE_FLAGS = ("is_superuser", "is_staff", "is_active")

# The catch-all entries below have no actor: a change made outside the actions (a shell, a
# script) has no acting user Sherlock can know, so the entry says "system".


def decide_when_gate_runs_finish(sender, run_id, status, **kwargs):
    """A run finished: decide every evaluating request it belongs to (once all its runs are
    done). Idempotent, as the signal may come twice: the action compares and sets."""
    from governance.actions.decide_publish_request import DecidePublishRequest
    from governance.models import PublishRequest

    pending = PublishRequest.objects.filter(runs=run_id, state=RequestState.EVALUATING)
    for pk in pending.values_list("pk", flat=True):
        DecidePublishRequest(publish_request_id=pk).execute()


def audit_login(sender, request, user, **kwargs):
    audit("auth.user.login", actor=user, target=user)


def audit_login_failed(sender, credentials, request=None, **kwargs):
    # Django has already masked the password in `credentials`; only the name is kept.
    username = str(credentials.get("username", ""))[:150]
    audit("auth.user.login_failed", target=("auth.user", "", username))


def audit_logout(sender, request, user, **kwargs):
    if user is not None:
        audit("auth.user.logout", actor=user, target=user)


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
            target=("auth.permission", instance.pk, str(instance)),
            after={"holders": sorted(pk_set or [])},
        )
        return
    from django.contrib.auth.models import Permission

    names = sorted(
        f"{p.content_type.app_label}.{p.codename}"
        for p in Permission.objects.filter(pk__in=pk_set or []).select_related("content_type")
    )
    audit(
        f"auth.permission.{verb}",
        target=instance,
        after={"perms": names if action != "post_clear" else "all"},
    )


def _object_perm_entry(instance, verb):
    holder = getattr(instance, "user", None) or getattr(instance, "group", None)
    audit(
        f"auth.permission.{verb}",
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


def remember_privileges(sender, instance, update_fields=None, **kwargs):
    if update_fields is not None and not set(update_fields) & set(PRIVILEGE_FLAGS):
        return
    stored = (
        sender.objects.filter(pk=instance.pk).values(*PRIVILEGE_FLAGS).first()
        if instance.pk
        else None
    )
    instance._privileges_before = stored


def audit_privileges(sender, instance, created, **kwargs):
    before = getattr(instance, "_privileges_before", None)
    if not hasattr(instance, "_privileges_before"):
        return
    del instance._privileges_before
    after = {flag: getattr(instance, flag) for flag in PRIVILEGE_FLAGS}
    if created:
        if not (instance.is_superuser or instance.is_staff):
            return
        before = None
    elif before == after:
        return
    audit("auth.user.privileges", target=instance, before=before, after=after)


def connect():
    user_model = get_user_model()
    run_finished.connect(decide_when_gate_runs_finish, sender=Run, dispatch_uid="gov-decide")
    user_logged_in.connect(audit_login, dispatch_uid="gov-login")
    user_login_failed.connect(audit_login_failed, dispatch_uid="gov-login-failed")
    user_logged_out.connect(audit_logout, dispatch_uid="gov-logout")
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
    pre_save.connect(remember_privileges, sender=user_model, dispatch_uid="gov-priv-before")
    post_save.connect(audit_privileges, sender=user_model, dispatch_uid="gov-priv-after")
