"""The group-to-role mapping of single sign-on, kept as data that Admins edit (docs/sso.md).

A provider (`SSOProvider`, one per OIDC app configured in the settings, by its id) says where
its tokens carry the user's groups (`claim_path`, a dotted path: `groups`,
`realm_access.roles`) and whether a user whose groups map to nothing is refused (`strict`).
Each `SSOGroupRole` maps one group to one role, globally or on one agent or dataset. The
mapping is re-applied at every sign-in (`governance.actions.apply_sso_roles`); rows change only
through the SSO actions, which audit them.
"""

from django.db import models
from django.db.models import Q

from governance.choices import Role


class SSOProvider(models.Model):
    """How the groups of one OIDC provider (its id in SHERLOCK_OIDC_PROVIDERS) are read."""

    provider_id = models.SlugField(max_length=100, unique=True)
    claim_path = models.CharField(
        max_length=200,
        default="groups",
        help_text="Where the groups are in the ID token or userinfo: a dotted path, e.g. "
        "groups or realm_access.roles.",
    )
    strict = models.BooleanField(
        default=False, help_text="Refuse a user whose groups map to no role."
    )

    class Meta:
        ordering = ["provider_id"]

    def __str__(self):
        return self.provider_id


class SSOGroupRole(models.Model):
    """One group of one provider grants one role, globally or on one agent or dataset. A role
    that may approve bypasses (Admin) is mapped only with `allow_bypass` set explicitly: no
    claim gives bypass approval by accident."""

    provider = models.ForeignKey(SSOProvider, on_delete=models.CASCADE, related_name="rules")
    group = models.CharField(max_length=200)
    role = models.CharField(max_length=20, choices=Role.choices)
    agent = models.ForeignKey(
        "agents.Agent", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    dataset = models.ForeignKey(
        "evaluations.Dataset", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    allow_bypass = models.BooleanField(default=False)

    class Meta:
        ordering = ["provider_id", "group", "role"]
        constraints = [
            models.CheckConstraint(
                name="ssogrouprole_one_scope",
                condition=Q(agent__isnull=True) | Q(dataset__isnull=True),
            ),
            models.CheckConstraint(
                name="ssogrouprole_bypass_is_explicit",
                condition=~Q(role=Role.ADMIN) | Q(allow_bypass=True),
            ),
        ]

    def __str__(self):
        return f"{self.group} -> {self.role} ({self.where})"

    @property
    def obj(self):
        return self.agent or self.dataset

    @property
    def where(self):
        if self.agent_id:
            return f"agent {self.agent}"
        if self.dataset_id:
            return f"dataset {self.dataset}"
        return "global"
