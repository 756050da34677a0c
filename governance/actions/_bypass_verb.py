"""The shared shape of the three verbs an Admin applies to an existing bypass."""

from django.utils import timezone

from agents.models import Agent
from governance.actions._bypass_state import may_move, move_bypass
from governance.actions.base import GovernanceAction
from governance.actions.expire_bypass import ExpireBypass
from governance.models import Bypass
from sherlock.core.errors import ActionConflict, ActionDenied
from sherlock.core.permissions import user_can


class BypassVerb(GovernanceAction):
    """Move one bypass to `to_state` (Admin only), where `BYPASS_TRANSITIONS` allows it from
    its current state (`_bypass_state.move_bypass` writes it); expiring it first if its time is
    up (that expiry is kept even when the verb is then refused)."""

    noun = "bypass"
    to_state: str | None = None

    def __init__(self, *, acting_user, bypass, reason=""):
        super().__init__(acting_user=acting_user)
        self.bypass = bypass
        self.reason = reason

    def refusal_target(self):
        return self.bypass

    def prepare(self):
        ExpireBypass(bypass=self.bypass).execute()

    def lock(self):
        agent_id = self.bypass.publish_request.agent_version.agent_id
        Agent.objects.select_for_update().filter(pk=agent_id).first()
        self.bypass = Bypass.objects.select_related(
            "publish_request__policy", "publish_request__agent_version__agent"
        ).get(pk=self.bypass.pk)

    def check(self):
        agent = self.bypass.publish_request.agent_version.agent
        if not user_can(self.acting_user, "bypass", agent):
            raise ActionDenied(f"Only an Admin may {self.verb} a bypass.", code="bypass_denied")
        if not may_move(self.bypass.state, self.to_state):
            raise ActionConflict(
                f"This bypass is {self.bypass.state}; it cannot be {self.to_state} now.",
                code=f"bypass_{self.bypass.state}",
            )

    def extra_fields(self):
        return {}

    def perform(self):
        bypass = self.bypass
        fields = {"decided_at": timezone.now(), **self.extra_fields()}
        if not move_bypass(bypass, self.to_state, **fields):
            raise ActionConflict("The bypass changed meanwhile.", code="conflict")
        self.audit(
            target=bypass,
            before={"state": bypass.state},
            after={"state": self.to_state},
            reason=self.reason,
        )
        for name, value in {"state": self.to_state, **fields}.items():
            setattr(bypass, name, value)
        return bypass
