"""UnmapSSOGroup: an Admin removes one rule of a provider's group-to-role mapping."""

from governance.actions.sso_fields import SSOVerb
from governance.people.roles import describe_scope


class UnmapSSOGroup(SSOVerb):
    """Delete `rule` (an `SSOGroupRole`). The roles it gave are revoked at each holder's next
    sign-in through the provider, as for a group removed at the provider. Returns the rule."""

    verb = "unmap"

    def __init__(self, *, acting_user, rule):
        super().__init__(acting_user=acting_user)
        self.rule = rule

    def check(self):
        self.check_role()

    def perform(self):
        provider = self.rule.provider
        before = {
            "group": self.rule.group,
            "role": self.rule.role,
            "scope": describe_scope(self.rule.obj),
            "allow_bypass": self.rule.allow_bypass,
        }
        self.rule.delete()
        self.audit(target=provider, before=before)
        return self.rule
