"""What the two version verbs share about tools: a version lists only its agent's own tools and
the shared ones (an Admin's), never another agent's."""

from sherlock.core.errors import ActionInvalid


def check_tools_of(agent, **lists):
    """Refuse (on the list's field) a tool that belongs to another agent."""
    for field, tools in lists.items():
        for tool in tools or ():
            if tool.agent_id is not None and tool.agent_id != agent.pk:
                raise ActionInvalid(
                    f"{field}: {tool.name} is another agent's tool; register it for "
                    f"{agent.slug} (or ask an Admin to share one)",
                    field=field,
                )
