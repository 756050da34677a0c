"""CreatePolicy: an Admin writes the first version of a publishing policy for a scope."""

from governance.actions.base import GovernanceAction
from governance.actions.policy_fields import POLICY_FIELDS, snapshot, validate
from governance.models import PublishingPolicy
from governance.people.roles import is_global_admin
from sherlock.core.errors import ActionConflict, ActionDenied


class CreatePolicy(GovernanceAction):
    """Create version 1 of the global policy (`agent` None) or of one agent's policy. Only a
    global Admin manages policies: a role granted for one agent never includes the right to
    set that agent's rules. A scope that already has a policy is changed with `UpdatePolicy`,
    which writes the next version."""

    noun = "policy"
    verb = "create"

    def __init__(self, *, acting_user, agent=None, gate_datasets=(), **fields):
        super().__init__(acting_user=acting_user)
        self.agent = agent
        self.gate_datasets = list(gate_datasets)
        self.fields = fields

    def refusal_target(self):
        return self.agent

    def check_role(self):
        if not is_global_admin(self.acting_user):
            raise ActionDenied("Only an Admin may manage publishing policies.")

    def check(self):
        self.check_role()
        scope = f"agent:{self.agent.pk}" if self.agent else "global"
        if PublishingPolicy.objects.filter(scope_key=scope).exists():
            raise ActionConflict(
                "This scope already has a policy; change it to write a new version.",
                code="policy_exists",
            )
        validate(PublishingPolicy(agent=self.agent, **self._known()), self.fields)

    def _known(self):
        return {k: v for k, v in self.fields.items() if k in POLICY_FIELDS}

    def perform(self):
        policy = PublishingPolicy.objects.create(
            agent=self.agent, version=1, created_by=self.acting_user, **self._known()
        )
        policy.gate_datasets.set(self.gate_datasets)
        self.audit(
            target=policy,
            after=snapshot(policy, self.gate_datasets),
        )
        return policy
