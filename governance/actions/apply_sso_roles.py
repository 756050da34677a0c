"""ApplySSORoles: at every single sign-on, the user's SSO-made role grants become exactly what
the provider's groups map to (docs/sso.md)."""

from typing import Any

from django.contrib.auth import get_user_model

from governance.actions.base import GovernanceAction
from governance.choices import GrantSource, RoleScope
from governance.models import RoleGrant, SSOProvider
from governance.people.roles import describe_scope, materialize, role_action, scoped_perms
from governance.sso.claims import evidence, groups_at, matching_rules


def _key(role, obj):
    kind = obj._meta.model_name if obj is not None else RoleScope.GLOBAL
    return (role, kind, obj.pk if obj is not None else None)


def _grant_key(grant):
    return (grant.role, grant.scope, grant.agent_id or grant.dataset_id)


class ApplySSORoles(GovernanceAction):
    """Re-apply the mapping of `provider_id` (`SSOProvider` and its `SSOGroupRole` rules) to the
    groups in `claims`, for `user`, who just signed in through that provider.

    Only grants marked as made by SSO from this provider are revoked (a group removed at the
    provider takes its role away at the next sign-in); grants made by hand are never touched,
    and a role the user already holds by hand is not granted twice. Each grant and revocation
    is its own `governance.role.grant` / `governance.role.revoke` entry (so the second-Admin
    rule reads SSO grants as it reads any), with `source: "sso"` and the claims that caused it
    (issuer, subject, claim path, groups). The actor is the system: no Admin made the change,
    the provider's groups did. Returns (granted, revoked) as lists of `RoleGrant`."""

    noun = "role"
    verb = "sso"

    def __init__(self, *, user, provider_id, claims):
        super().__init__(acting_user=None)
        self.user = user
        self.provider_id = provider_id
        self.claims = claims

    def refusal_target(self):
        return self.user

    def lock(self):
        get_user_model().objects.select_for_update().filter(pk=self.user.pk).first()

    def mapping(self):
        """(claim path, rules matched by the user's groups, groups); no mapping, no rules."""
        provider = SSOProvider.objects.filter(provider_id=self.provider_id).first()
        if provider is None:
            return "", [], []
        groups = groups_at(self.claims, provider.claim_path)
        rules = provider.rules.select_related("agent", "dataset")
        return provider.claim_path, matching_rules(list(rules), groups), groups

    def perform(self):
        path, rules, groups = self.mapping()
        why = evidence(self.claims, path, groups)
        wanted: dict[Any, Any] = {}
        for rule in rules:
            wanted.setdefault(_key(rule.role, rule.obj), rule)
        grants = list(RoleGrant.objects.filter(user=self.user).select_related("agent", "dataset"))
        held = {_grant_key(grant): grant for grant in grants}
        mine = {
            _grant_key(grant): grant
            for grant in grants
            if grant.source == GrantSource.SSO and grant.sso_provider == self.provider_id
        }
        granted, revoked = [], []
        reason = f"Single sign-on through {self.provider_id}."
        for key, rule in wanted.items():
            if key in held:
                continue  # held already: by hand, or from this sign-in's predecessors
            obj = rule.obj
            kind = obj._meta.model_name if obj is not None else RoleScope.GLOBAL
            grant = RoleGrant.objects.create(
                user=self.user,
                role=rule.role,
                scope=kind,
                agent=obj if kind == RoleScope.AGENT else None,
                dataset=obj if kind == RoleScope.DATASET else None,
                reason=reason,
                source=GrantSource.SSO,
                sso_provider=self.provider_id,
            )
            with role_action():
                materialize(self.user, obj)
            self.audit(
                verb="grant",
                target=self.user,
                after={
                    "role": rule.role,
                    "scope": describe_scope(obj),
                    "perms": scoped_perms(rule.role, obj) if obj is not None else [],
                    "source": GrantSource.SSO,
                    "provider": self.provider_id,
                    "group": rule.group,
                    "claims": why,
                },
                reason=reason,
            )
            granted.append(grant)
        for key, grant in mine.items():
            if key in wanted:
                continue
            obj = grant.obj
            grant.delete()
            with role_action():
                _added, removed = materialize(self.user, obj)
            self.audit(
                verb="revoke",
                target=self.user,
                before={"role": grant.role, "scope": describe_scope(obj)},
                after={
                    ("perms_removed" if obj is not None else "groups_removed"): removed,
                    "source": GrantSource.SSO,
                    "provider": self.provider_id,
                    "claims": why,
                },
                reason=f"{reason} No group of the user maps to this role any more.",
            )
            revoked.append(grant)
        return granted, revoked
