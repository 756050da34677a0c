"""Publish requests and bypasses: the decision a version's evaluation earned, and overrides."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents.models import AgentScopedQuerySet
from governance.choices import REQUEST_DECIDED, BypassState, RequestState

# The final states of a request that took its version live.
PUBLISHED_STATES = (RequestState.PUBLISHED, RequestState.BYPASSED)


class PublishRequestQuerySet(AgentScopedQuerySet):
    scope_path = "agent_version__agent"

    def current(self):
        """The requests that may speak for their version, newest first: all but the superseded
        (`current_for` takes the first of one version's; the versions list reads it per row as a
        subquery)."""
        return self.exclude(state=RequestState.SUPERSEDED).order_by("-pk")

    def current_for(self, version):
        """The current publish request of `version`, or None: its newest request that was not
        superseded. The one answer to "which request speaks for this version now" for the
        publish action, the publish page, `manage.py gate` and `seed_demo`; chain it after
        `select_related`/`prefetch_related` as each needs.

        Superseded requests are out: asking again replaced them, and their bypasses are void. A
        rejected request stays current: a rejection is the latest word on the version and the
        answer a person looks for ("why can't I publish?"); skipping it would bring back an
        older request (on a rolled-back version, the one that once published it) and show a
        decision nobody acts on. So the page shows it, publishing refuses it (`request_closed`:
        ask again) and `manage.py gate` asks again (with `--user`) instead of reading it."""
        return self.current().filter(agent_version=version).first()

    def open_decision_for(self, version):
        """The decision of `version` still waiting to be acted on, or None: its newest request
        that passed or was blocked (neither published, rejected nor superseded). Asking again
        throws it away, so `RequestPublication` asks that it be named."""
        return self.filter(agent_version=version, state__in=REQUEST_DECIDED).order_by("-pk").first()

    def published(self):
        """The requests a version went live on (published, or bypassed past a blocked gate: both
        final, both with `published_at`), the newest publication first."""
        return self.filter(state__in=PUBLISHED_STATES).order_by("-published_at", "-pk")

    def published_for(self, version):
        """The request `version` last went live on, or None: the one answer to "on what was it
        published" for `sherlock verify`'s publication, the production contract's gate runs and
        the rollback target."""
        return self.published().filter(agent_version=version).first()


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
    # The live version's runs the gate runs are paired with, one per gate dataset version, under
    # a policy with a margin of regression (`evaluations.verdict.paired`): its latest completed
    # run there, or one started beside the gate runs.
    live_runs = models.ManyToManyField("evaluations.Run", blank=True, related_name="+")
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

    def stale_reason(self, version, in_force):
        """Why this request's decision no longer speaks for `version`, or "": the version's
        configuration moved since (its config hash), or the policy in force (`in_force`, None
        when none is) is not the one the request was made under. The one staleness rule:
        publishing, bypassing, asking again (`RequestPublication`), the publish page and
        `manage.py gate` all read it."""
        if self.config_hash != version.config_hash:
            return "The version's configuration changed since its decision."
        if in_force is None or self.policy_id != in_force.pk:
            return (
                f"The publishing policy changed since this decision (now {in_force}); "
                "request publication again."
            )
        return ""

    def speaks_for(self, version, in_force):
        """This request was made for `version` as it is configured now, under `in_force` (the
        policy in force; None when none is): its decision can still be acted on."""
        return not self.stale_reason(version, in_force)

    def leads_to(self, version, in_force):
        """Whether this request can still take `version` live, with nothing asked again: it is
        not rejected, and it speaks for the version as it is, a decided request under the policy
        in force (`in_force`), one still evaluating (or already published) under its own. What
        `manage.py gate` reads before it asks again."""
        if self.state == RequestState.REJECTED:
            return False
        return self.speaks_for(version, in_force if self.state in REQUEST_DECIDED else self.policy)


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
