"""PublishVersion: the one path to a live version."""

from typing import Any

from django.utils import timezone

from agents.choices import VERSION_STATES, VersionState
from agents.models import Agent, AgentVersion
from governance.actions._bypass_state import move_bypass
from governance.actions._request_state import move_request
from governance.actions.base import GovernanceAction
from governance.actions.expire_bypass import ExpireBypass
from governance.choices import BypassState, RequestState, WebhookEvent
from governance.models import PublishingPolicy, PublishRequest
from governance.publishing.decision import outcome_of, release_of
from governance.publishing.next_step import NO_DECISION, next_step
from governance.webhooks import notify
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.permissions import user_can


class PublishVersion(GovernanceAction):
    """Make a draft (or, for `RollBackVersion`, a retired) version live and retire the previous
    live version, atomically: nothing else sets `Agent.live_version`.

    With the agent row locked it checks again, on fresh rows, the Publisher's right, the
    separation of duties and the decision of the version's current request (this exact
    configuration, the policy still in force); then the gate as `next_step` answers it: a
    passed decision publishes, a blocked one publishes under an `advisory` policy, under a
    `soft` one only with an approved bypass of this decision (used up here), never under a
    `hard` one. docs/governance.md, "Publishing" and "Bypass", says it for a person.
    """

    noun = "version"
    verb = "publish"
    from_state = VersionState.DRAFT

    def __init__(self, *, acting_user, agent_version, reason=""):
        super().__init__(acting_user=acting_user)
        self.agent_version = agent_version
        self.reason = reason
        self.request: Any = None  # the decided request, found by check()
        self.route = None
        self.bypass = None

    def refusal_target(self):
        return self.agent_version

    def current_request(self):
        return PublishRequest.objects.select_related("policy").current_for(self.agent_version)

    def prepare(self):
        # Touching a bypass expires it if its time is up; committed even if we are refused.
        request = self.current_request()
        if request is not None:
            for bypass in request.bypasses.filter(state=BypassState.APPROVED):
                ExpireBypass(bypass=bypass).execute()

    def lock(self):
        self.agent = Agent.objects.select_for_update().get(pk=self.agent_version.agent_id)
        self.agent_version = AgentVersion.objects.select_related("agent").get(
            pk=self.agent_version.pk
        )

    def check(self):
        user, version = self.acting_user, self.agent_version
        agent = version.agent
        if not user_can(user, "publish", agent):
            raise ActionDenied(
                "You may not publish versions of this agent (Publisher role needed)."
            )
        self.check_state(version)
        request = self.current_request()
        step = next_step(version, request, PublishingPolicy.objects.in_force_for(agent))
        if step.code in NO_DECISION:
            raise ActionConflict(step.why, code=step.code)
        if request.policy.creator_may_not_publish and version.created_by_id == user.pk:
            raise ActionDenied(
                "Separation of duties: the creator of a version may not publish it.",
                code="separation_of_duties",
            )
        if not step.may_publish:
            raise ActionConflict(step.why, code=step.code)
        self.request = request
        self.route, self.bypass = step.route, step.bypass

    def check_state(self, version):
        if version.state == VersionState.PUBLISHED:
            raise ActionConflict("This version is already published.", code="already_published")
        if version.state != self.from_state:
            raise ActionConflict(
                "This version is retired; roll back to publish it again.", code="retired"
            )

    def perform(self):
        now = timezone.now()
        version, agent, request, user = (
            self.agent_version,
            self.agent,
            self.request,
            self.acting_user,
        )
        previous = agent.live_version_id
        retired = []
        for old in AgentVersion.objects.filter(agent=agent, state=VersionState.PUBLISHED).exclude(
            pk=version.pk
        ):
            if not VERSION_STATES.move(old, VersionState.RETIRED):
                continue  # retired meanwhile by someone else, who wrote its entry
            self.audit(
                verb="retire",
                actor=user,
                target=old,
                before={"state": VersionState.PUBLISHED, "live": old.pk == previous},
                after={"state": VersionState.RETIRED, "live": False},
                reason=f"replaced by v{version.number}",
            )
            retired.append(old)
        # From the state `check()` saw (draft, or retired for a rollback), if still so.
        if not VERSION_STATES.move(version, VersionState.PUBLISHED):
            raise ActionConflict("The version changed state meanwhile.", code="conflict")
        Agent.objects.filter(pk=agent.pk).update(live_version=version)
        if self.bypass is not None:
            if not move_bypass(self.bypass, BypassState.USED, used_at=now):
                raise ActionConflict("The bypass was used or revoked meanwhile.", code="conflict")
            self.audit(
                noun="bypass",
                verb="use",
                actor=user,
                target=self.bypass,
                before={"state": BypassState.APPROVED},
                after={"state": BypassState.USED, "agent_version": version.pk},
                reason=self.bypass.reason,
            )
            notify(
                WebhookEvent.BYPASS_USED,
                {
                    "bypass": self.bypass.pk,
                    "publish_request": request.pk,
                    "agent": agent.slug,
                    "agent_version": version.number,
                    "used_by": user.get_username(),
                    "reason": self.bypass.reason,
                },
            )
        new_state = RequestState.BYPASSED if self.bypass else RequestState.PUBLISHED
        if not move_request(request, new_state, published_at=now, published_by=user):
            raise ActionConflict("The publish request changed meanwhile.", code="conflict")
        self.audit(
            actor=user,
            target=version,
            before={"state": self.from_state, "live_version": previous},
            after={
                "state": VersionState.PUBLISHED,
                "live_version": version.pk,
                "publish_request": request.pk,
                "request_state": new_state,
                "release": release_of(request.decision),
                # passed, failed or incomplete: a bypass of an incomplete decision says so.
                "outcome": outcome_of(request.decision),
                "cleared_by": self.route,
                "bypass": self.bypass.pk if self.bypass else None,
                "policy": {"id": request.policy_id, "version": request.policy.version},
            },
            reason=self.reason,
        )
        # Signed last, so the audit head each statement names includes this publication.
        version.state = VersionState.PUBLISHED
        self.attest(self.verb, version, request=request, bypass=self.bypass)
        for old in retired:
            old.state = VersionState.RETIRED
            self.attest("retire", old, replacedBy=f"v{version.number}")
        notify(
            WebhookEvent.VERSION_PUBLISHED,
            {
                "agent": agent.slug,
                "agent_version": version.number,
                "previous_live_version": previous,
                "live_version": version.pk,
                "via": self.verb,
                "cleared_by": self.route,
                "publish_request": request.pk,
                "published_by": user.get_username(),
            },
        )
        version.state = VersionState.PUBLISHED
        return version
