"""CreateOnlineRule: an agent's online rule, the first time (one per agent)."""

from production.actions.online_rule_fields import apply, check_may_write, snapshot
from production.models import OnlineRule
from sherlock.core.actions import Action
from sherlock.core.errors import ActionConflict


class CreateOnlineRule(Action):
    """Write the online rule of `agent` from `fields` (names of `online_rule_fields.FIELDS`;
    the judge model is pinned to the configured one when not given). A Builder or an Admin of
    the agent may, naming checks only of a dataset version they may see (`online_rule_fields`);
    refused when the agent has one already (update it instead)."""

    noun = "online_rule"
    verb = "create"

    def __init__(self, *, acting_user, agent, **fields):
        super().__init__(acting_user=acting_user)
        self.agent = agent
        self.fields = fields
        self.rule = OnlineRule(agent=agent, created_by=acting_user)

    def check(self):
        check_may_write(self.acting_user, self.agent)
        if OnlineRule.objects.filter(agent=self.agent).exists():
            raise ActionConflict(
                "This agent has an online rule already: change it instead.", code="exists"
            )
        apply(self.rule, self.fields, self.acting_user)

    def perform(self):
        self.rule.save()
        self.audit(
            target=self.rule,
            after=snapshot(self.rule),
        )
        return self.rule
