"""Who may be the second Admin that approves a bypass. What makes a bypass void,
shared by approving and using one, is `governance.publishing.next_step.void_reason`."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from governance.models import AuditEntry
from sherlock.core.permissions import MODEL_BACKEND

# The audit entries that give a user Admin rights, whichever path wrote them: `GrantRole`, and
# the catch-all receivers (governance.receivers) for a group membership, a bypass permission or
# the superuser flag set any other way (a shell, `createsuperuser`, a data fix).
ADMIN_GRANT_CODES = (
    "governance.role.grant",
    "auth.membership.add",
    "auth.permission.grant",
    "auth.user.privileges",
)
BYPASS_PERM = "agents.bypass_agent"


def _grants_admin_on(entry, agent_id):
    """Whether `entry` gave its target user Admin rights that reach agent `agent_id`."""
    after, before = entry.after or {}, entry.before or {}
    if entry.action == "governance.role.grant":
        scope = after.get("scope")
        return after.get("role") == "Admin" and (
            scope == "global"
            or (
                isinstance(scope, dict)
                and scope.get("type") == "agents.agent"
                and str(scope.get("id")) == str(agent_id)
            )
        )
    if entry.action == "auth.membership.add":
        return "Admin" in (after.get("groups") or [])
    if entry.action == "auth.permission.grant":
        obj = after.get("object")
        return BYPASS_PERM in (after.get("perms") or []) and (
            obj is None
            or (obj.get("type") == "agents.agent" and str(obj.get("id")) == str(agent_id))
        )
    return after.get("is_superuser") is True and before.get("is_superuser") is not True


def newest_admin_grant(user, agent):
    """The newest audit entry that gave `user` Admin rights reaching `agent`, or None.

    The audit log is the record of who granted what and when: it is append-only (a trigger) and
    hash-chained, every path that changes rights writes to it, and a grant row of our own would
    be one more thing an Admin could edit. The newest grant counts, even when an older one
    still stands: a fresh grant by the requester is reason enough to doubt the second pair of
    eyes (fail closed)."""

    entries = AuditEntry.objects.filter(
        target_type=f"{user._meta.app_label}.{user._meta.model_name}",
        target_id=str(user.pk),
        action__in=ADMIN_GRANT_CODES,
    ).order_by("-sequence")
    for entry in entries.only(
        "sequence", "at", "action", "actor_id", "actor_repr", "before", "after"
    ):
        if _grants_admin_on(entry, agent.pk):
            return entry
    return None


def approver_conflict(bypass, approver, agent, policy, *, now=None):
    """Why `approver` may not approve `bypass` of `agent` under `policy`, or "".

    A second Admin is only a second pair of eyes when the requester did not make them one: an
    Admin whose Admin rights were granted by the bypass's requester is refused, and so is one
    whose rights are younger than the policy's `bypass_approver_min_role_age_hours` (a requester
    could otherwise ask a colleague to mint an Admin for the occasion). Rights of unknown
    origin (no grant in the audit log) are refused too."""
    now = now or timezone.now()
    grant = newest_admin_grant(approver, agent)
    if grant is None:
        return (
            "The audit log has no record of how you became an Admin, so you cannot be the "
            "second Admin of a bypass; ask a global Admin to grant you the role."
        )
    when = f"{grant.at:%Y-%m-%d %H:%M} UTC"
    granter = grant.actor_repr or "the system"
    if grant.actor_id is not None and grant.actor_id == bypass.requested_by_id:
        return (
            f"Your Admin role was granted by the requester, {granter}, on {when}; "
            "a bypass needs a second Admin whose role does not come from its requester."
        )
    window = timedelta(hours=policy.bypass_approver_min_role_age_hours)
    if window and grant.at > now - window:
        return (
            f"Your Admin role was granted by {granter} on {when}; the policy lets an Admin "
            f"approve bypasses {policy.bypass_approver_min_role_age_hours} hours after the "
            f"grant, from {grant.at + window:%Y-%m-%d %H:%M} UTC."
        )
    return ""


APPROVERS_NAMED = 5


def who_may_approve(bypass, agent, policy, *, now=None):
    """The usernames (at most `APPROVERS_NAMED`) of the Admins who may approve `bypass` now:
    global Admins (and superusers) other than its requester for whom `approver_conflict` finds
    nothing, for the publish page's "waits for". One query for the candidates, one
    audit look-up each."""

    candidates = (
        get_user_model()
        ._default_manager.with_perm(BYPASS_PERM, backend=MODEL_BACKEND)
        .exclude(pk=bypass.requested_by_id)
        .order_by("username")
    )
    named = []
    for user in candidates[: APPROVERS_NAMED * 4]:
        if not approver_conflict(bypass, user, agent, policy, now=now):
            named.append(user.username)
        if len(named) == APPROVERS_NAMED:
            break
    return named


def pending_text(bypass, agent, policy, *, now=None):
    """What a requested bypass waits for, and who may give it: "bypass #4, requested by admin,
    waits for a second Admin's approval: ..."."""
    requester = bypass.requested_by or "the system"
    rule = f"an Admin other than {requester}, whose Admin role {requester} did not grant"
    hours = policy.bypass_approver_min_role_age_hours
    if hours:
        rule += f" and is at least {hours} hours old"
    approvers = who_may_approve(bypass, agent, policy, now=now)
    if approvers:
        who = f"who may approve it now: {', '.join(approvers)}"
    else:
        who = (
            "no Admin may approve it now; with one seeded Admin, the order that works is in "
            'docs/governance.md, "Bypass with one seeded Admin"'
        )
    return (
        f"bypass #{bypass.pk}, requested by {requester}, waits for a second Admin's approval "
        f"({rule}); {who}"
    )
