"""The Agent aggregate: an agent, its immutable versions and the tools it may call."""

import hashlib
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from agents.adapters import validate_config
from agents.choices import Adapter, VersionState
from agents.verifiers.spec import InvalidVerifier, validate_verifier_spec
from sherlock.core.permissions import ScopedQuerySet, ScopedThroughQuerySet


def config_hash(adapter, config):
    """A stable hash of what a version is: its adapter and canonical config."""
    canonical = json.dumps({"adapter": adapter, "config": config}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class AgentScopedQuerySet(ScopedThroughQuerySet):
    """Rows that belong to an agent: visible to whoever may see the agent."""

    scope_path = "agent"


class Agent(models.Model):
    """A thing under evaluation (a chat assistant, a tool-using agent, an HTTP service).

    `live_version` is the one published version users get; only the publish action sets it.
    """

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    live_version = models.ForeignKey(
        "agents.AgentVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ScopedQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]
        # Verbs granted per agent (guardian) or globally (group); see governance.people.roles.
        permissions = [
            ("build_agent", "Can create draft versions, start runs and request publication"),
            ("publish_agent", "Can publish, retire and roll back versions"),
            ("bypass_agent", "Can bypass a failed gate with a reason"),
        ]

    def __str__(self):
        return self.slug


class ToolQuerySet(models.QuerySet):
    def for_agent(self, agent_id):
        """The tools an agent's calls are read against: its own and the shared ones."""
        return self.filter(models.Q(agent_id=agent_id) | models.Q(agent__isnull=True))

    def named(self, agent_id, names):
        """``{name: Tool}`` of `names` for the agent (one query): the agent's own tool when it
        registered one of that name, else the shared one."""
        return self.named_for_agents([agent_id], names)[agent_id]

    def named_for_agents(self, agent_ids, names):
        """``{agent id: {name: Tool}}``: `named` for several agents at once (one query)."""
        agent_ids = list(agent_ids)
        found: dict[int, dict[str, Any]] = {agent_id: {} for agent_id in agent_ids}
        if not names:
            return found
        rows = self.filter(name__in=set(names)).filter(
            models.Q(agent_id__in=agent_ids) | models.Q(agent__isnull=True)
        )
        shared = [tool for tool in rows if tool.agent_id is None]
        for agent_id in agent_ids:
            found[agent_id] = {tool.name: tool for tool in shared}
        for tool in rows:
            if tool.agent_id is not None:
                found[tool.agent_id][tool.name] = tool  # the agent's own wins over a shared one
        return found


class Tool(models.Model):
    """A tool an agent may call, registered for one agent by its Builders (`agent`), or shared
    by a global Admin with every agent (`agent` empty). An agent's own tool of a name wins over
    a shared one (`Tool.objects.named`). Effectful tools write somewhere; their effect is
    checked at the destination by `verifier` (the transcript is not evidence of the effect),
    written in the language of `agents.verifiers.spec` and run by `agents.verifiers.runners`.
    High-impact tools may be denied by a version's tool policy."""

    agent = models.ForeignKey(
        "agents.Agent",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="own_tools",
        help_text="The agent whose tool this is (its Builders register it); empty: shared by "
        "an Admin with every agent.",
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    arguments_schema = models.JSONField(default=dict, blank=True)
    effectful = models.BooleanField(default=False)
    verifier = models.JSONField(
        default=dict, blank=True, help_text="How to check the effect at the destination."
    )
    high_impact = models.BooleanField(default=False)

    objects = ToolQuerySet.as_manager()

    class Meta:
        ordering = ["name", "agent_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "name"],
                condition=models.Q(agent__isnull=False),
                name="tool_name_once_per_agent",
            ),
            models.UniqueConstraint(
                fields=["name"], condition=models.Q(agent__isnull=True), name="shared_tool_name"
            ),
        ]

    def __str__(self):
        return self.name

    @property
    def owner_text(self):
        return f"agent {self.agent.slug}" if self.agent else "shared"

    def clean(self):
        """A verifier is checked when it is saved (shape, and the operator's allowlists), so a
        typo shows in the form, not as an unverifiable effect on the next run."""
        super().clean()
        # JSON `null` passes a form's JSON field but not the NOT NULL column (a 500 otherwise).
        for name in ("arguments_schema", "verifier"):
            if not isinstance(getattr(self, name), dict):
                raise ValidationError({name: "Give a JSON object ({} for none)."})
        if self.verifier:
            try:
                validate_verifier_spec(self.verifier)
            except InvalidVerifier as exc:
                raise ValidationError({"verifier": str(exc)}) from None


class AgentVersion(models.Model):
    """An immutable snapshot of an agent's configuration: `draft` -> `published` -> `retired`.

    The config is frozen once the version leaves `draft` or has a run (`clean` refuses a change
    then); `config_hash` binds decisions and bypasses to exactly this configuration.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    name = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="A name the team gives the version (a git commit, a release tag): unique per "
        "agent when set; the `sherlock` client finds its versions by it (docs/client.md).",
    )
    state = models.CharField(
        max_length=10, choices=VersionState.choices, default=VersionState.DRAFT
    )
    adapter = models.CharField(max_length=20, choices=Adapter.choices)
    config = models.JSONField(default=dict, blank=True)
    config_hash = models.CharField(max_length=64, editable=False)
    tools = models.ManyToManyField(Tool, blank=True, related_name="versions")
    denied_tools = models.ManyToManyField(
        Tool,
        blank=True,
        related_name="denied_in_versions",
        help_text="High-impact tools this version's policy refuses to call.",
    )
    notes = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AgentScopedQuerySet.as_manager()

    class Meta:
        ordering = ["agent", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="agentversion_unique_number"),
            models.UniqueConstraint(
                fields=["agent", "name"],
                condition=~models.Q(name=""),
                name="agentversion_unique_name",
            ),
            models.CheckConstraint(
                condition=models.Q(state__in=VersionState.values), name="agentversion_state_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(adapter__in=Adapter.values), name="agentversion_adapter_valid"
            ),
        ]

    def __str__(self):
        return f"{self.agent.slug} v{self.number}"

    def save(self, *args, **kwargs):
        self.config_hash = config_hash(self.adapter, self.config)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "config" in update_fields:
            kwargs["update_fields"] = {*update_fields, "config_hash"}
        super().save(*args, **kwargs)

    @property
    def is_frozen(self):
        return self.state != VersionState.DRAFT or self.runs.exists()

    def clean(self):

        try:
            self.config = validate_config(self.adapter, self.config)
        except ValueError as exc:
            raise ValidationError({"config": str(exc)}) from None
        if self.pk:
            stored = type(self).objects.filter(pk=self.pk).values("config_hash").first()
            changed = stored and stored["config_hash"] != config_hash(self.adapter, self.config)
            if changed and self.is_frozen:
                raise ValidationError(
                    {"config": "This version is frozen (it left draft or has a run)."}
                )
