"""UpdateOnlineRule: change an agent's online rule, with before and after in the audit."""

from production.actions.online_rule_fields import apply, check_may_write, snapshot
from production.models import OnlineRule
from sherlock.core.actions import Action


class UpdateOnlineRule(Action):
    """Apply `changes` to `rule` (a Builder or an Admin of its agent; a new `library_version`
    only of a dataset they may see, `online_rule_fields`). Scores already made
    stay as they were; the new rule applies to the traces scored from now on."""

    noun = "online_rule"
    verb = "update"

    def __init__(self, *, acting_user, rule, changes):
        super().__init__(acting_user=acting_user)
        self.rule = rule
        self.changes = changes

    def check(self):
        check_may_write(self.acting_user, self.rule.agent)
        self.rule = OnlineRule.objects.select_for_update().get(pk=self.rule.pk)
        self.before = snapshot(self.rule)
        apply(self.rule, self.changes, self.acting_user)

    def perform(self):
        self.rule.save()
        self.audit(
            target=self.rule,
            before=self.before,
            after=snapshot(self.rule),
        )
        return self.rule
