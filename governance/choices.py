"""Choices of the governance app, and the allowed request and bypass transitions."""

from django.db import models

from sherlock.core.states import StateMachine


class Role(models.TextChoices):
    VIEWER = "Viewer", "Viewer"
    EDITOR = "Editor", "Editor"
    BUILDER = "Builder", "Builder"
    PUBLISHER = "Publisher", "Publisher"
    ADMIN = "Admin", "Admin"


class Enforcement(models.TextChoices):
    ADVISORY = "advisory", "advisory (report only)"
    SOFT = "soft", "soft (an Admin may bypass)"
    HARD = "hard", "hard (no bypass)"


class RateDecision(models.TextChoices):
    """What a gate on a rate decides on: the rate as measured (a point estimate), or its
    interval, which leaves a gate it straddles undecided ("insufficient evidence")."""

    POINT = "point", "the point estimate"
    INTERVAL = "interval", "the interval (insufficient evidence when it straddles the threshold)"


class RequestState(models.TextChoices):
    EVALUATING = "evaluating", "evaluating"
    PASSED = "passed", "passed"
    BLOCKED = "blocked", "blocked"
    PUBLISHED = "published", "published"
    BYPASSED = "bypassed", "bypassed"
    REJECTED = "rejected", "rejected"
    SUPERSEDED = "superseded", "superseded"


# Enforced by `REQUEST_STATES` (through `governance.actions._request_state.move_request`), the
# only writer of a request's state after creation.
REQUEST_TRANSITIONS = {
    RequestState.EVALUATING: {
        RequestState.PASSED,
        RequestState.BLOCKED,
        RequestState.REJECTED,
        RequestState.SUPERSEDED,
    },
    RequestState.PASSED: {RequestState.PUBLISHED, RequestState.SUPERSEDED, RequestState.REJECTED},
    # blocked -> published only under an `advisory` policy (report only); otherwise a blocked
    # request is published through a bypass, and ends `bypassed`.
    RequestState.BLOCKED: {
        RequestState.PUBLISHED,
        RequestState.BYPASSED,
        RequestState.SUPERSEDED,
        RequestState.REJECTED,
    },
}


class BypassState(models.TextChoices):
    REQUESTED = "requested", "requested"
    APPROVED = "approved", "approved"
    USED = "used", "used"
    DENIED = "denied", "denied"
    EXPIRED = "expired", "expired"
    REVOKED = "revoked", "revoked"


# Enforced by `BYPASS_STATES` (through `governance.actions._bypass_state.move_bypass`), the only
# writer of a bypass's state after creation (a bypass is created `requested`): the Admin's verbs,
# the self-approval when no second Admin is needed, and the system's own moves (expire, use,
# revoke on supersede).
BYPASS_TRANSITIONS = {
    BypassState.REQUESTED: {
        BypassState.APPROVED,
        BypassState.DENIED,
        BypassState.EXPIRED,
        BypassState.REVOKED,
    },
    BypassState.APPROVED: {BypassState.USED, BypassState.EXPIRED, BypassState.REVOKED},
}
BYPASS_ACTIVE = {BypassState.REQUESTED, BypassState.APPROVED}
REQUEST_STATES = StateMachine("PublishRequest", "state", REQUEST_TRANSITIONS)
BYPASS_STATES = StateMachine("Bypass", "state", BYPASS_TRANSITIONS)
# A decided request a Publisher (or an Admin's bypass) can still act on, until superseded.
REQUEST_DECIDED = (RequestState.PASSED, RequestState.BLOCKED)


class WebhookEvent(models.TextChoices):
    """The events a webhook endpoint may subscribe to (`governance.webhooks.notify`); the value
    is what a delivery's `X-Sherlock-Event` header and body `event` carry."""

    RUN_FINISHED = "run.finished", "run finished"
    DECISION_MADE = "decision.made", "decision made"
    VERSION_PUBLISHED = "version.published", "version published"
    BYPASS_USED = "bypass.used", "bypass used"
    SCHEDULE_FAILED = "schedule.failed", "schedule failed"
    AUDIT_CHECKPOINT = "audit.checkpoint", "audit checkpoint"
    # A live version breached the publishing policy over production traces with enough
    # evidence (`production.online.breach`); a rollback proposal was opened.
    PRODUCTION_BREACH = "production.breach", "production breach"


class APIKeyState(models.TextChoices):
    """What an API key is now (`APIKey.state`), derived from `revoked` and its expiry."""

    ACTIVE = "active"
    EXPIRED = "expired"
    REVOKED = "revoked"


class GrantSource(models.TextChoices):
    """Who made a role grant: an Admin by hand (GrantRole), or single sign-on from the groups
    a provider sent (ApplySSORoles, re-applied at every sign-in; docs/sso.md)."""

    HAND = "hand", "by an Admin"
    SSO = "sso", "single sign-on"


class RoleScope(models.TextChoices):
    """Where a role grant holds: everywhere (the role's group), or on one agent or dataset."""

    GLOBAL = "global", "global"
    AGENT = "agent", "agent"
    DATASET = "dataset", "dataset"


class AttestationEvent(models.TextChoices):
    """The release event an attestation states."""

    PUBLISH = "publish", "published"
    ROLLBACK = "rollback", "rolled back to"
    RETIRE = "retire", "retired"
