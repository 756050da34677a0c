"""Tools belong to agents: a tool listed (offered or denied) by the versions of exactly one
agent becomes that agent's; a tool of several agents, or of none, stays shared (a global Admin's
list), so nothing an agent relies on moves out of its reach."""

import django.db.models.deletion
from django.db import migrations, models


def move_to_their_agents(apps, schema_editor):
    Tool = apps.get_model("agents", "Tool")
    AgentVersion = apps.get_model("agents", "AgentVersion")
    users: dict[int, set[int]] = {}
    for relation in ("tools", "denied_tools"):
        through = getattr(AgentVersion, relation).through
        rows = through.objects.values_list("tool_id", "agentversion__agent_id")
        for tool_id, agent_id in rows:
            users.setdefault(tool_id, set()).add(agent_id)
    for tool_id, agents in users.items():
        if len(agents) == 1:
            Tool.objects.filter(pk=tool_id).update(agent_id=next(iter(agents)))


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0002_client_runs"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="tool",
            options={"ordering": ["name", "agent_id"]},
        ),
        migrations.AddField(
            model_name="tool",
            name="agent",
            field=models.ForeignKey(
                blank=True,
                help_text="The agent whose tool this is (its Builders register it); empty: shared by an Admin with every agent.",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="own_tools",
                to="agents.agent",
            ),
        ),
        migrations.AlterField(
            model_name="tool",
            name="name",
            field=models.CharField(max_length=200),
        ),
        migrations.RunPython(move_to_their_agents, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="tool",
            constraint=models.UniqueConstraint(
                condition=models.Q(("agent__isnull", False)),
                fields=("agent", "name"),
                name="tool_name_once_per_agent",
            ),
        ),
        migrations.AddConstraint(
            model_name="tool",
            constraint=models.UniqueConstraint(
                condition=models.Q(("agent__isnull", True)),
                fields=("name",),
                name="shared_tool_name",
            ),
        ),
    ]
