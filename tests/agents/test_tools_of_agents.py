"""Tools belong to agents: a Builder of an agent registers its tools (audited), a global Admin
shares tools with every agent, and an agent's own tool of a name wins over a shared one, in the
versions API, the actions and the effects read from a transcript. The migration gives a tool to
the one agent whose versions list it and leaves the rest shared."""

import importlib

import pytest
from django.apps import apps

from agents.actions.create_draft_version import CreateDraftVersion
from agents.models import Tool
from evaluations.engine.evidence import tool_effects
from governance.models import AuditEntry
from sherlock.core.errors import ActionInvalid
from tests.support import factories
from tests.support.governance import api_client, grant_on

ECHO = {"callable": "tests.support.agents_under_test.echo"}
LEDGER = {"kind": "python", "callable": "agents.demo.effect_in_ledger", "params": {"kind": "x"}}


@pytest.fixture
def team(db):
    acme = factories.agent("acme-helpdesk")
    other = factories.agent("other-bot")
    omar = grant_on(factories.user("omar"), "Builder", acme)
    return {
        "acme": acme,
        "other": other,
        "omar": omar,
        "admin": factories.user("ada", role="Admin"),
    }


def form(**fields):
    return {"name": "billing.lookup", "description": "", "arguments_schema": "{}",
            "verifier": "{}", **fields}  # fmt: skip


def test_an_agents_own_tool_wins_over_a_shared_one(team):
    acme, other = team["acme"], team["other"]
    shared = Tool.objects.create(name="kb.search")
    own = Tool.objects.create(name="kb.search", agent=acme, effectful=True)
    theirs = Tool.objects.create(name="billing.lookup", agent=other)
    assert Tool.objects.named(acme.pk, {"kb.search", "billing.lookup"}) == {"kb.search": own}
    assert Tool.objects.named(other.pk, {"kb.search", "billing.lookup"}) == {
        "kb.search": shared,
        "billing.lookup": theirs,
    }


def test_a_builder_registers_a_tool_for_the_agent_it_builds_and_no_other(team, client):
    acme, other = team["acme"], team["other"]
    client.force_login(team["omar"])
    assert 'href="/admin/agents/tool/"' in client.get("/admin/").content.decode()  # found
    made = client.post("/admin/agents/tool/add/", form(agent=acme.pk, effectful="on"))
    assert made.status_code == 302, made.content.decode()[:2000]
    tool = Tool.objects.get(name="billing.lookup")
    assert tool.agent == acme
    entry = AuditEntry.objects.get(action="agents.tool.create")
    assert entry.actor_id == team["omar"].pk

    for refused in (form(agent=other.pk), form(agent="")):
        answer = client.post("/admin/agents/tool/add/", {**refused, "name": "crm.note"})
        assert answer.status_code == 200  # the form again, with why
        assert not Tool.objects.filter(name="crm.note").exists()
    told = client.post("/admin/agents/tool/add/", form(agent="", name="crm.note"))
    assert "only an Admin shares a tool with every agent" in told.content.decode()

    shared = Tool.objects.create(name="kb.search")
    theirs = Tool.objects.create(name="kb.search", agent=other)
    for tool in (shared, theirs):
        changed = client.post(f"/admin/agents/tool/{tool.pk}/change/", form(name="renamed"))
        assert changed.status_code in (302, 403)  # refused, or not found among its tools
        tool.refresh_from_db()
        assert tool.name == "kb.search"


def test_an_admin_shares_a_tool_and_a_name_is_once_per_agent(team, client):
    client.force_login(team["admin"])
    assert client.post("/admin/agents/tool/add/", form(agent="")).status_code == 302
    assert Tool.objects.get(name="billing.lookup").agent is None
    acme = team["acme"]
    assert client.post("/admin/agents/tool/add/", form(agent=acme.pk)).status_code == 302
    again = client.post("/admin/agents/tool/add/", form(agent=acme.pk))
    assert again.status_code == 200 and Tool.objects.filter(agent=acme).count() == 1


def test_a_version_lists_its_agents_tools_and_the_shared_ones_never_anothers(team):
    acme, other = team["acme"], team["other"]
    own = Tool.objects.create(name="kb.search", agent=acme)
    Tool.objects.create(name="kb.search", agent=other)
    Tool.objects.create(name="orders.lookup")
    Tool.objects.create(name="crm.note", agent=other)
    api = api_client(team["omar"])
    body = {"agent": acme.slug, "adapter": "python", "config": ECHO}
    made = api.post("/api/v1/versions/", {**body, "tools": ["kb.search", "orders.lookup"]})
    assert made.status_code == 201, made.content
    version = acme.versions.get()
    assert set(version.tools.all()) == {own, Tool.objects.get(name="orders.lookup")}
    refused = api.post("/api/v1/versions/", {**body, "tools": ["crm.note"]}, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "tools"
    assert "no tool named 'crm.note' for acme-helpdesk" in refused.json()["detail"]
    with pytest.raises(ActionInvalid, match="another agent's tool"):
        CreateDraftVersion(
            acting_user=team["omar"],
            agent=acme,
            adapter="python",
            config=ECHO,
            tools=[Tool.objects.get(name="crm.note")],
        ).execute()


def test_an_effect_is_read_against_the_calling_agents_own_tool(team):
    acme, other = team["acme"], team["other"]
    Tool.objects.create(name="billing.credit", agent=acme, effectful=True, verifier=LEDGER)
    acme_version = factories.agent_version(acme, callable_path=ECHO["callable"])
    other_version = factories.agent_version(other, callable_path=ECHO["callable"])
    transcript = {"output": "done", "tool_calls": [{"name": "billing.credit", "arguments": {}}]}
    (mine,) = tool_effects(acme_version, transcript, {})
    (theirs,) = tool_effects(other_version, transcript, {})
    assert "not registered" not in str(mine.get("evidence"))
    assert theirs["state"] == "unknown" and "not registered" in str(theirs["evidence"])


def test_the_migration_gives_a_tool_to_its_one_agent_and_leaves_the_rest_shared(team):
    acme, other = team["acme"], team["other"]
    alone, both, unused = (Tool.objects.create(name=n) for n in ("a.one", "b.both", "c.none"))
    for agent, tools in ((acme, [alone, both]), (other, [both])):
        version = factories.agent_version(agent, callable_path=ECHO["callable"])
        version.tools.set(tools)
    migration = importlib.import_module("agents.migrations.0003_tools_belong_to_agents")
    migration.move_to_their_agents(apps, None)
    owners = dict(Tool.objects.values_list("name", "agent_id"))
    assert owners == {"a.one": acme.pk, "b.both": None, "c.none": None}
