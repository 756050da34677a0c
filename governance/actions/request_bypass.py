"""RequestBypass: an Admin overrides one blocked decision, with a substantive reason."""

from datetime import timedelta

from django.utils import timezone

from agents.models import Agent
from governance.actions._bypass_state import move_bypass
from governance.actions.base import GovernanceAction, substantive_reason
from governance.actions.expire_bypass import ExpireBypass
from governance.choices import BYPASS_ACTIVE, BypassState, RequestState
from governance.models import Bypass, PublishingPolicy, PublishRequest
from governance.publishing.decision import outcome_of
from governance.publishing.next_step import NOTHING, PUBLISH, blocked_allows
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.permissions import user_can


class RequestBypass(GovernanceAction):
    """Ask to override the blocked decision of `publish_request` (Admin only: the bypass right
    is separate from the publish right, so a Publisher has none).

    The bypass is bound to that decision snapshot and to the version's config hash, expires after
    the policy's `bypass_expiry_hours`, and is used once, by the publish action. When the policy
    requires a second Admin it waits in `requested` for a different Admin's approval; otherwise
    the request is its own approval (both steps are audited). A `hard` policy cannot be bypassed;
    an `advisory` one needs no bypass (`governance.publishing.next_step.blocked_allows`); a decision
    that no longer speaks for the version (`PublishRequest.stale_reason`) cannot be bypassed either.
    Every refusal is audited (`governance.bypass.refused`).
    """

    noun = "bypass"
    verb = "request"

    def __init__(self, *, acting_user, publish_request, reason):
        super().__init__(acting_user=acting_user)
        self.publish_request = publish_request
        self.reason = reason

    def refusal_target(self):
        return self.publish_request

    def prepare(self):
        for bypass in Bypass.objects.filter(
            publish_request=self.publish_request, state__in=BYPASS_ACTIVE
        ):
            ExpireBypass(bypass=bypass).execute()

    def lock(self):
        Agent.objects.select_for_update().filter(
            pk=self.publish_request.agent_version.agent_id
        ).first()
        self.publish_request = PublishRequest.objects.select_related(
            "policy", "agent_version__agent"
        ).get(pk=self.publish_request.pk)

    def check(self):
        self.check_without_reason()
        self.reason = substantive_reason(self.reason)

    def check_without_reason(self):
        """Everything but the reason: what a page asks before showing the bypass form."""
        request = self.publish_request
        version = request.agent_version
        if not user_can(self.acting_user, "bypass", version.agent):
            raise ActionDenied(
                "Only an Admin may bypass a gate; Publishers and Builders have no bypass right.",
                code="bypass_denied",
            )
        if request.state != RequestState.BLOCKED:
            raise ActionConflict(
                f"Only a blocked decision can be bypassed; this request is {request.state}.",
                code="not_blocked",
            )
        allowed = blocked_allows(request.policy)
        if allowed == NOTHING:
            raise ActionConflict(
                "The policy is hard: its gate cannot be bypassed.", code="hard_policy"
            )
        if allowed == PUBLISH:
            raise ActionConflict(
                "The policy is advisory: a blocked decision does not block publishing.",
                code="advisory_policy",
            )
        stale = request.stale_reason(version, PublishingPolicy.objects.in_force_for(version.agent))
        if stale:
            raise ActionConflict(stale, code="stale_decision")
        if request.bypasses.filter(state__in=BYPASS_ACTIVE).exists():
            raise ActionConflict(
                "A bypass of this decision is already requested or approved.",
                code="already_requested",
            )

    def perform(self):
        request, user = self.publish_request, self.acting_user
        policy = request.policy
        now = timezone.now()
        second_admin = policy.bypass_requires_second_admin
        bypass = Bypass.objects.create(
            publish_request=request,
            requested_by=user,
            reason=self.reason,
            state=BypassState.REQUESTED,
            decision=request.decision,
            config_hash=request.config_hash,
            expires_at=now + timedelta(hours=policy.bypass_expiry_hours),
        )
        self.audit(
            actor=user,
            target=bypass,
            after={
                "state": BypassState.REQUESTED,
                "publish_request": request.pk,
                "agent_version": request.agent_version_id,
                "config_hash": bypass.config_hash,
                "first_failing_gate": request.decision.get("first_failing_gate"),
                # failed or incomplete (evidence missing, nothing failed): what is bypassed.
                "outcome": outcome_of(request.decision),
                "expires_at": bypass.expires_at,
                "requires_second_admin": second_admin,
            },
            reason=self.reason,
        )
        if not second_admin:
            # The request is its own approval: the row was created a moment ago, in this
            # transaction, with the agent locked, so no one else can have moved it.
            if not move_bypass(bypass, BypassState.APPROVED, approved_by=user, decided_at=now):
                raise ActionConflict("The bypass changed meanwhile.", code="conflict")
            bypass.state, bypass.approved_by, bypass.decided_at = BypassState.APPROVED, user, now
            self.audit(
                verb="approve",
                actor=user,
                target=bypass,
                before={"state": BypassState.REQUESTED},
                after={"state": BypassState.APPROVED},
                reason="the policy does not require a second Admin",
            )
        return bypass
