"""The agent pickers (sherlock.core.pickers): agents and agent versions the person may see, or
may build (the start-run form's versions), searched by slug, name or version number."""

from agents.models import Agent, AgentVersion
from sherlock.core.pickers import Kind, int_param, register


def agents(user, params):
    return Agent.objects.for_user(user).order_by("slug")


def versions(action):
    def rows(user, params):
        found = AgentVersion.objects.for_user(user, action).select_related("agent")
        agent = int_param(params, "agent")
        if agent is not None:
            found = found.filter(agent_id=agent)
        return found.order_by("agent__slug", "-number")

    return rows


def version_text(version):
    named = f" {version.name}" if version.name else ""
    return f"{version.agent.slug} v{version.number}{named} ({version.state})"


register("agent", Kind(agents, words=("slug", "name"), by=("pk", "slug")))
VERSION_WORDS = ("agent__slug", "agent__name", "name")
register("agent-version", Kind(versions("view"), VERSION_WORDS, "number", text=version_text))
# The versions of the agents the person may start runs of (Builder or Admin on the agent).
register(
    "agent-version-build",
    Kind(
        versions("build"),
        VERSION_WORDS,
        "number",
        text=version_text,
        none="No version of an agent you may build matches: the Builder role on one is needed.",
    ),
)
