"""What may happen next to a version, and why: the publishing rules written once.

A version's current publish request (`PublishRequest.objects.current_for`) holds a decision
(`governance.publishing.decision`); what that decision lets happen depends on the request's state,
on whether it still speaks for the version (`PublishRequest.stale_reason`), on the policy's
enforcement level and on the bypasses given. `next_step(version, request, in_force)` answers
it once, as a `NextStep`:

- `publish`: the version may be published, and how (`route`): the gate `passed`; the policy is
  `advisory` (report only); or an approved `bypass`, bound to this decision, used up then;
- `bypass`: the gate blocked it under a `soft` policy, so it needs an Admin's bypass (or the
  one given is void);
- `request`: there is no decision to act on (none, closed, or stale): ask again;
- `wait`: the gate runs are still evaluating;
- `nothing`: the gate blocked it under a `hard` policy: nobody may publish it.

`why` is the sentence the publish action refuses with and `code` its refusal code.
`PublishVersion` (and `RollBackVersion`) act on it, `RequestBypass` reads what the enforcement
level allows (`blocked_allows`), the publish page tells it (`what_it_waits_for`) and `manage.py
gate` exits by it; the API reaches it through those actions.

`void_reason` is what makes a given bypass void (shared by approving and using one); who may be
the second Admin approving one is `governance.publishing.bypass_rules`.
"""

from dataclasses import dataclass

from django.utils import timezone

from evaluations.choices import RunStatus
from evaluations.verdict import INCOMPLETE, INSUFFICIENT, gate_label
from governance.choices import BypassState, Enforcement, RequestState
from governance.publishing.bypass_rules import pending_text
from governance.publishing.decision import PASS, blocking_gate, outcome_of, release_of

PUBLISH, BYPASS, REQUEST, WAIT, NOTHING = "publish", "bypass", "request", "wait", "nothing"
# How a version clears the gate (`NextStep.route`); recorded in the publish audit entry.
PASSED, ADVISORY, BYPASSED = "passed", "advisory", "bypass"
# The refusal codes that say the request has no decision to act on (ask again, or wait).
NO_DECISION = ("no_request", "evaluating", "request_closed", "stale_decision")


@dataclass(frozen=True)
class NextStep:
    """What may happen next to a version (`step`), why (`why`, the publish refusal's sentence;
    "" when it may be published) and the refusal code of publishing now (`code`, "" when it
    may); for `publish`, how it clears the gate (`route`) and the bypass it uses up."""

    step: str
    why: str = ""
    code: str = ""
    route: str = ""
    request: object = None
    bypass: object = None
    failing: str = ""

    @property
    def may_publish(self):
        return self.step == PUBLISH


def blocked_allows(policy):
    """What a blocked decision under `policy` allows, by its enforcement level: `publish`
    (advisory: report only), `bypass` (soft) or `nothing` (hard)."""
    if policy.enforcement == Enforcement.ADVISORY:
        return PUBLISH
    if policy.enforcement == Enforcement.HARD:
        return NOTHING
    return BYPASS


def next_step(version, request, in_force, *, now=None):
    """What may happen next to `version` whose current request is `request` (None when it has
    none), with `in_force` the policy in force for its agent (None when none is). Reads the
    request's newest approved bypass (one query) when the gate blocked under a soft policy, and
    whether a gate run waits for the client (one query) while the request is evaluating."""
    if request is None:
        return NextStep(
            REQUEST, "This version has no publish request; request publication first.", "no_request"
        )
    if request.state == RequestState.EVALUATING:
        if request.runs.filter(status=RunStatus.WAITING).exists():
            # A client version's gate runs wait for its client, not for a worker (docs/client.md).
            return NextStep(
                WAIT,
                "The gate runs of this version are waiting for the client (`sherlock run`).",
                "waiting_for_client",
                request=request,
            )
        return NextStep(
            WAIT,
            "The gate runs of this version are still evaluating.",
            "evaluating",
            request=request,
        )
    if request.state not in (RequestState.PASSED, RequestState.BLOCKED):
        return NextStep(
            REQUEST,
            f"The publish request is {request.state}; request publication again.",
            "request_closed",
            request=request,
        )
    stale = request.stale_reason(version, in_force)
    if stale:
        return NextStep(REQUEST, stale, "stale_decision", request=request)
    if release_of(request.decision) == PASS:
        return NextStep(PUBLISH, route=PASSED, request=request)
    failing = blocking_gate(request.decision) or "unknown"
    allowed = blocked_allows(request.policy)
    if allowed == PUBLISH:
        return NextStep(PUBLISH, route=ADVISORY, request=request, failing=failing)
    blocked = _blocked_words(request.decision, failing)
    if allowed == NOTHING:
        return NextStep(
            NOTHING,
            f"{blocked}; the policy is hard: no bypass is possible.",
            "blocked",
            request=request,
            failing=failing,
        )
    bypass = request.bypasses.filter(state=BypassState.APPROVED).order_by("-pk").first()
    if bypass is None:
        return NextStep(
            BYPASS,
            f"{blocked}; publishing it needs an approved bypass.",
            "blocked",
            request=request,
            failing=failing,
        )
    problem = void_reason(bypass, request, version, now=now)
    if problem:
        return NextStep(
            BYPASS, problem, "bypass_void", request=request, bypass=bypass, failing=failing
        )
    return NextStep(PUBLISH, route=BYPASSED, request=request, bypass=bypass, failing=failing)


def _blocked_words(decision, failing):
    """Why a blocked decision blocks, in the publish page's words: incomplete, insufficient
    evidence, or the gate that failed."""
    outcome = outcome_of(decision)
    if outcome == INCOMPLETE:
        return (
            "The gate could not decide on this version (incomplete: evidence is missing, "
            "nothing failed); run the gate again once it is fixed"
        )
    if outcome == INSUFFICIENT:
        return (
            "The gate could not decide on this version (insufficient evidence: an interval "
            f"straddles the {gate_label(failing)} threshold, nothing failed); add cases to the "
            "gate dataset and run the gate again"
        )
    return f"The gate blocked this version ({failing})"


def what_it_waits_for(step):
    """What an open decision (passed or blocked) waits for, in the publish page's words; ""
    when the request has no decision open (none, evaluating, closed)."""
    request = step.request
    if request is None or request.state not in (RequestState.PASSED, RequestState.BLOCKED):
        return ""
    if step.code == "stale_decision":
        return (
            f"Request #{request.pk} {request.state} under a policy or a "
            "configuration that changed since; it can no longer be published: ask again."
        )
    if step.route == PASSED:
        return f"Request #{request.pk} passed; it waits for a Publisher."
    if outcome_of(request.decision) == INCOMPLETE:
        text = (
            f"Request #{request.pk} is incomplete: its gate runs lack evidence (above), nothing "
            "failed. First, request publication again once what is missing is fixed"
        )
        if step.step == NOTHING:
            return f"{text}; the policy is hard: it cannot be bypassed."
    elif outcome_of(request.decision) == INSUFFICIENT:
        text = (
            f"Request #{request.pk} has insufficient evidence at {gate_label(step.failing)}: "
            "its interval straddles the threshold, nothing failed. More evidence would decide "
            "it"
        )
    else:
        text = f"Request #{request.pk} was blocked at {gate_label(step.failing)}"
    if step.route == ADVISORY:
        return f"{text}; the policy is advisory (report only): it waits for a Publisher."
    if step.step == NOTHING:
        return f"{text}; the policy is hard: it cannot be bypassed."
    if step.bypass is not None:
        return f"{text}; bypass #{step.bypass.pk} is approved: it waits for a Publisher."
    pending = request.bypasses.filter(state=BypassState.REQUESTED).order_by("-pk").first()
    if pending is not None:
        agent = request.agent_version.agent
        return f"{text}; {pending_text(pending, agent, request.policy)}."
    if outcome_of(request.decision) == INCOMPLETE:
        return f"{text}; otherwise publishing it needs an Admin's bypass of the incomplete gate."
    return f"{text}; publishing it needs an Admin's bypass."


def void_reason(bypass, publish_request, agent_version, *, now=None):
    """Why `bypass` cannot override `publish_request`'s decision for `agent_version`, or "".

    A bypass overrides one decision about one configuration: if the request was decided again
    or the version's config hash moved, it speaks about something else and is void. It also
    expires (policy `bypass_expiry_hours`).
    """
    now = now or timezone.now()
    if bypass.expires_at <= now:
        return f"The bypass expired at {bypass.expires_at:%Y-%m-%d %H:%M} UTC."
    if bypass.publish_request_id != publish_request.pk:
        return "The bypass belongs to another publish request."
    if bypass.decision != publish_request.decision:
        return "The decision changed since the bypass was given; the bypass is void."
    if bypass.config_hash != agent_version.config_hash:
        return "The version's configuration changed since the bypass was given; it is void."
    return ""
