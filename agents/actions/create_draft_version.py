"""CreateDraftVersion: a Builder adds a new draft version of an agent, with its tools.

The admin's add form and `POST /api/v1/versions/` (tools and denied tools by name) both create
drafts here, so both are checked and audited the same way; the audit entry names the tools.
"""

from django.db.models import Max

from agents.actions._tools import check_tools_of
from agents.adapters import validate_config
from agents.models import Agent, AgentVersion
from sherlock.core.actions import Action
from sherlock.core.egress import EgressRefused
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid, ActionRefused
from sherlock.core.limits import CONFIG_MAX_BYTES, NOTE_MAX, VERSION_NAME_MAX, excerpt
from sherlock.core.permissions import user_can


class CreateDraftVersion(Action):
    """Create the next-numbered draft of `agent` with a validated adapter config, and `name`
    when given (a git commit, a release tag; unique per agent: `name_taken` otherwise)."""

    verb = "create"

    noun = "version"  # refusals: agents.version.refused, as its entry is agents.version.create
    text_limits = {"notes": NOTE_MAX, "name": VERSION_NAME_MAX}
    document_limits = {"config": CONFIG_MAX_BYTES}

    def __init__(
        self, *, acting_user, agent, adapter, config, notes="", tools=(), denied_tools=(), name=""
    ):
        super().__init__(acting_user=acting_user)
        self.agent = agent
        self.name = name or ""
        self.adapter = adapter
        self.config = config
        self.notes = notes
        self.tools = tools
        self.denied_tools = denied_tools

    def check(self):
        if not user_can(self.acting_user, "build", self.agent):
            raise ActionDenied("You may not create versions of this agent (Builder role needed).")
        check_tools_of(self.agent, tools=self.tools, denied_tools=self.denied_tools)
        try:
            validate_config(self.adapter, self.config)
        except EgressRefused as exc:  # audited: naming a secret or a host is evidence
            raise ActionRefused(str(exc), field="config") from None
        except ValueError as exc:
            raise ActionInvalid(str(exc), field="config") from None

    def perform(self):
        # Lock the agent so two concurrent drafts cannot take the same number.
        Agent.objects.select_for_update().filter(pk=self.agent.pk).first()
        if self.name and self.agent.versions.filter(name=self.name).exists():
            raise ActionConflict(
                f"{self.agent.slug} already has a version named {excerpt(self.name)}.",
                code="name_taken",
                field="name",
            )
        last = self.agent.versions.aggregate(n=Max("number"))["n"] or 0
        version = AgentVersion.objects.create(
            agent=self.agent,
            number=last + 1,
            name=self.name,
            adapter=self.adapter,
            config=self.config,
            notes=self.notes,
            created_by=self.acting_user,
        )
        version.tools.set(self.tools)
        version.denied_tools.set(self.denied_tools)
        self.audit(
            target=version,
            after={
                "number": version.number,
                **({"name": version.name} if version.name else {}),
                "adapter": version.adapter,
                "config_hash": version.config_hash,
                **tool_names(version),
            },
        )
        return version


def tool_names(version):
    """The version's tool policy as the audit log records it: sorted tool names."""
    return {
        "tools": sorted(tool.name for tool in version.tools.all()),
        "denied_tools": sorted(tool.name for tool in version.denied_tools.all()),
    }
