"""Publish requests and bypasses: the decision a version's evaluation earned, and overrides."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents.models import AgentScopedQuerySet
from governance.choices import BypassState, RequestState


class PublishRequestQuerySet(AgentScopedQuerySet):
    scope_path = "agent_version__agent"


class BypassQuerySet(AgentScopedQuerySet):
    scope_path = "publish_request__agent_version__agent"


class PublishRequest(models.Model):
    """A request to publish a draft version. It holds the gate runs and, once they finish, the
    decision snapshot: every gate with its numbers, the runs and the policy version used."""

    agent_version = models.ForeignKey(
        "agents.AgentVersion", on_delete=models.CASCADE, related_name="publish_requests"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    state = models.CharField(
        max_length=12, choices=RequestState.choices, default=RequestState.EVALUATING
    )
    policy = models.ForeignKey(
        "governance.PublishingPolicy", on_delete=models.PROTECT, related_name="requests"
    )
    runs = models.ManyToManyField("evaluations.Run", blank=True, related_name="publish_requests")
    config_hash = models.CharField(max_length=64)
    decision = models.JSONField(default=dict, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PublishRequestQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=RequestState.values), name="publishrequest_state_valid"
            ),
        ]

    def __str__(self):
        return f"Publish {self.agent_version} ({self.state})"

    def speaks_for(self, version, policy):
        """This request was made for `version` as it is configured now, under `policy` (the
        one in force; None when none is): its decision can still be acted on. Asking again
        (`RequestPublication`), the publish page and `manage.py gate` read staleness so."""
        return (
            self.config_hash == version.config_hash
            and policy is not None
            and self.policy_id == policy.pk
        )


class Bypass(models.Model):
    """An Admin's audited override of one blocked decision: bound to that decision snapshot and
    the version's config hash, used once, and expiring. `requested -> approved -> used`, or
    `denied`, `expired`, `revoked`."""

    publish_request = models.ForeignKey(
        PublishRequest, on_delete=models.CASCADE, related_name="bypasses"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField()
    state = models.CharField(
        max_length=10, choices=BypassState.choices, default=BypassState.REQUESTED
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decision = models.JSONField(default=dict)
    config_hash = models.CharField(max_length=64)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    used_at = models.DateTimeField(null=True, blank=True)

    objects = BypassQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "bypasses"
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=BypassState.values), name="bypass_state_valid"
            ),
        ]

    def __str__(self):
        return f"Bypass #{self.pk} ({self.state})"
