"""Role grants: the record of who holds which role where, from which rights are derived."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from governance.choices import GrantSource, Role, RoleScope


class RoleGrantQuerySet(models.QuerySet):
    def on(self, obj):
        """The grants on `obj` (an agent or a dataset), or the global grants when it is None."""
        if obj is None:
            return self.filter(scope=RoleScope.GLOBAL)
        kind = obj._meta.model_name
        return self.filter(scope=kind, **{f"{kind}_id": obj.pk})


class RoleGrant(models.Model):
    """One role granted to one user: globally, or on one agent or dataset.

    The grant is what the Admin gave (who, when, why); the rights are derived from the grants:
    `governance.people.roles.materialize` makes the user's role-group memberships, and their
    guardian object permissions on the grant's object, exactly the union of what their grants there
    carry. So every permission check (`has_perm`, `for_user`) keeps reading groups and guardian, and
    revoking one grant takes away exactly what it gave. Rows are written only by `GrantRole`
    (create) and `RevokeRole` (delete), which audit both; the history is the audit log. A grant
    goes with its agent or dataset (CASCADE: `governance.receivers` audits each as a revocation
    and deletes guardian's rows for the object), and with its user.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="role_grants"
    )
    role = models.CharField(max_length=20, choices=Role.choices)
    scope = models.CharField(max_length=10, choices=RoleScope.choices)
    agent = models.ForeignKey(
        "agents.Agent", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    dataset = models.ForeignKey(
        "evaluations.Dataset", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    granted_at = models.DateTimeField(default=timezone.now)
    reason = models.TextField(blank=True)
    # A grant made by single sign-on (`ApplySSORoles`) is the provider's to take back: it is
    # revoked at the next sign-in whose groups no longer map to it. Hand-made grants are never
    # touched by a sign-in, and SSO never adds a grant the user already holds by hand.
    source = models.CharField(max_length=10, choices=GrantSource.choices, default=GrantSource.HAND)
    sso_provider = models.CharField(max_length=100, blank=True)

    objects = RoleGrantQuerySet.as_manager()

    class Meta:
        ordering = ["user_id", "scope", "role"]
        constraints = [
            # The scope says which object is named, and only that one.
            models.CheckConstraint(
                name="rolegrant_scope_names_its_object",
                condition=(
                    Q(scope=RoleScope.GLOBAL, agent__isnull=True, dataset__isnull=True)
                    | Q(scope=RoleScope.AGENT, agent__isnull=False, dataset__isnull=True)
                    | Q(scope=RoleScope.DATASET, agent__isnull=True, dataset__isnull=False)
                ),
            ),
            # A role with no meaning on a kind of object (governance.people.roles.OBJECT_PERMS).
            models.CheckConstraint(
                name="rolegrant_role_fits_scope",
                condition=~Q(scope=RoleScope.AGENT, role=Role.EDITOR)
                & ~Q(scope=RoleScope.DATASET, role__in=[Role.BUILDER, Role.PUBLISHER]),
            ),
            # One grant of a role per user and place: NULLs are distinct in a plain unique
            # constraint, so each scope has its own, over the columns it sets.
            models.UniqueConstraint(
                fields=["user", "role"],
                condition=Q(scope=RoleScope.GLOBAL),
                name="rolegrant_unique_global",
            ),
            models.UniqueConstraint(
                fields=["user", "role", "agent"],
                condition=Q(scope=RoleScope.AGENT),
                name="rolegrant_unique_agent",
            ),
            models.UniqueConstraint(
                fields=["user", "role", "dataset"],
                condition=Q(scope=RoleScope.DATASET),
                name="rolegrant_unique_dataset",
            ),
        ]

    def __str__(self):
        return f"{self.role} of {self.user} ({self.where})"

    @property
    def obj(self):
        """The agent or dataset the grant holds on, None for a global grant."""
        return self.agent or self.dataset

    @property
    def where(self):
        return "global" if self.scope == RoleScope.GLOBAL else f"{self.scope} {self.obj}"
