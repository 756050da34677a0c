"""MapSSOGroup: an Admin maps one provider group to one role, globally or on one object."""

from governance.actions._role_verb import check_grantable
from governance.actions.sso_fields import SSOVerb
from governance.choices import Role
from governance.models import SSOGroupRole, SSOProvider
from governance.people.roles import describe_scope
from sherlock.core.errors import ActionConflict, ActionInvalid, raise_invalid


class MapSSOGroup(SSOVerb):
    """Add the rule `group -> role` (on `obj`, an agent or a dataset, or globally) to the
    mapping of `provider_id`. The Admin role approves bypasses, so it is mapped only with
    `allow_bypass` set: no claim grants bypass approval unless the mapping says so. Takes
    effect at each user's next sign-in. Returns the rule."""

    verb = "map"
    text_limits = {"group": 200}

    def __init__(self, *, acting_user, provider_id, group, role, obj=None, allow_bypass=False):
        super().__init__(acting_user=acting_user)
        self.provider_id = provider_id
        self.group = (group or "").strip()
        self.role = role
        self.obj = obj
        self.allow_bypass = bool(allow_bypass)

    def check(self):
        self.check_role()
        self.check_provider(self.provider_id)
        errors = []  # every problem of the mapping at once
        if not self.group:
            errors.append(ActionInvalid("Name the provider's group.", field="group"))
        try:
            check_grantable(self.role, self.obj)
        except ActionInvalid as exc:
            errors.append(exc)
        if self.role == Role.ADMIN and not self.allow_bypass:
            errors.append(
                ActionInvalid(
                    "An Admin approves bypasses of the publish gate: tick 'may approve "
                    "bypasses' to map a group to the Admin role.",
                    field="allow_bypass",
                )
            )
        raise_invalid(errors)
        if self.existing().exists():
            raise ActionConflict(f"{self.group} already maps to {self.role} there.", code="exists")

    def existing(self):
        kind = self.obj._meta.model_name if self.obj is not None else None
        return SSOGroupRole.objects.filter(
            provider__provider_id=self.provider_id,
            group=self.group,
            role=self.role,
            agent=self.obj if kind == "agent" else None,
            dataset=self.obj if kind == "dataset" else None,
        )

    def perform(self):
        provider, _ = SSOProvider.objects.get_or_create(provider_id=self.provider_id)
        kind = self.obj._meta.model_name if self.obj is not None else None
        rule = SSOGroupRole.objects.create(
            provider=provider,
            group=self.group,
            role=self.role,
            agent=self.obj if kind == "agent" else None,
            dataset=self.obj if kind == "dataset" else None,
            allow_bypass=self.allow_bypass,
        )
        self.audit(
            target=provider,
            after={
                "group": rule.group,
                "role": rule.role,
                "scope": describe_scope(self.obj),
                "allow_bypass": rule.allow_bypass,
            },
        )
        return rule
