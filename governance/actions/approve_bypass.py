"""ApproveBypass: a second Admin agrees to a requested bypass."""

from governance.actions._bypass_verb import BypassVerb
from governance.choices import BypassState
from governance.publishing.bypass_rules import approver_conflict
from governance.publishing.next_step import void_reason
from sherlock.core.errors import ActionConflict, ActionDenied


class ApproveBypass(BypassVerb):
    """Approve a `requested` bypass (Admin). When the policy requires a second Admin, the
    approver must be a different Admin from the requester (four eyes; a bypass whose policy
    needs no second Admin is approved when requested). The approver's Admin rights may not come
    from the requester, nor be younger than the policy's `bypass_approver_min_role_age_hours`
    (`bypass_rules.approver_conflict`, from the audit log's grants): otherwise an Admin could
    mint a second Admin and approve their own bypass. The bypass must still speak about the
    request's current decision and the version's current configuration."""

    verb = "approve"
    to_state = BypassState.APPROVED

    def check(self):
        super().check()
        request = self.bypass.publish_request
        if (
            request.policy.bypass_requires_second_admin
            and self.bypass.requested_by_id == self.acting_user.pk
        ):
            raise ActionDenied(
                "A second, different Admin must approve this bypass.", code="same_admin"
            )
        agent = request.agent_version.agent
        doubt = approver_conflict(self.bypass, self.acting_user, agent, request.policy)
        if doubt:
            raise ActionDenied(doubt, code="approver_not_independent")
        problem = void_reason(self.bypass, request, request.agent_version)
        if problem:
            raise ActionConflict(problem, code="bypass_void")

    def extra_fields(self):
        return {"approved_by": self.acting_user}
