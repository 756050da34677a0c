"""Admin edits no action makes are audited with before and after: an agent's
name, description and owner, its deletion, and tools (added, changed, deleted), each with the
signed-in user as the actor; a save that changes nothing writes nothing."""

import pytest

from agents.models import Agent, Tool
from governance.models import AuditEntry
from tests.support import factories


def agent_form(agent, **changes):
    data = {
        "slug": agent.slug,
        "name": agent.name,
        "description": agent.description,
        "owner": agent.owner_id or "",
        # the read-only versions inline's management form
        "versions-TOTAL_FORMS": 0,
        "versions-INITIAL_FORMS": 0,
    }
    data.update(changes)
    return data


def tool_form(**fields):
    return {
        "name": "kb.search",
        "description": "",
        "arguments_schema": "{}",
        "verifier": "{}",
        **fields,
    }


@pytest.fixture
def agent(db, builder):
    return factories.agent("support-bot", owner=builder)


def test_changing_an_agent_in_the_admin_is_audited_with_before_and_after(
    logged_in, admin_user, agent
):
    response = logged_in(admin_user).post(
        f"/admin/agents/agent/{agent.pk}/change/",
        agent_form(agent, name="Support bot", description="Answers customers"),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    entry = AuditEntry.objects.get(action="agents.agent.update")
    assert entry.actor_id == admin_user.pk and entry.target_id == str(agent.pk)
    assert entry.before == {"name": "Support-Bot", "description": ""}
    assert entry.after == {"name": "Support bot", "description": "Answers customers"}


def test_handing_an_agent_to_another_owner_is_audited(logged_in, admin_user, agent, publisher):
    logged_in(admin_user).post(
        f"/admin/agents/agent/{agent.pk}/change/", agent_form(agent, owner=publisher.pk)
    )
    entry = AuditEntry.objects.get(action="agents.agent.update")
    assert entry.before == {"owner": agent.owner_id} and entry.after == {"owner": publisher.pk}


def test_saving_an_agent_unchanged_writes_no_entry(logged_in, admin_user, agent):
    logged_in(admin_user).post(f"/admin/agents/agent/{agent.pk}/change/", agent_form(agent))
    assert not AuditEntry.objects.filter(action="agents.agent.update").exists()


def test_deleting_an_agent_in_the_admin_is_audited_with_what_it_was(logged_in, admin_user, agent):
    response = logged_in(admin_user).post(
        f"/admin/agents/agent/{agent.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert not Agent.objects.filter(pk=agent.pk).exists()
    entry = AuditEntry.objects.get(action="agents.agent.delete")
    assert entry.actor_id == admin_user.pk and entry.target_repr == str(agent)
    assert entry.before["slug"] == "support-bot" and entry.before["id"] == agent.pk


def test_a_publisher_who_may_not_change_an_agent_leaves_it_and_writes_no_update(
    logged_in, publisher, agent
):
    logged_in(publisher).post(
        f"/admin/agents/agent/{agent.pk}/change/", agent_form(agent, name="X")
    )
    agent.refresh_from_db()
    assert agent.name != "X"
    assert not AuditEntry.objects.filter(action="agents.agent.update").exists()


def test_tools_added_changed_and_deleted_in_the_admin_are_audited(logged_in, admin_user):
    client = logged_in(admin_user)
    response = client.post("/admin/agents/tool/add/", tool_form(effectful="on"))
    assert response.status_code == 302, response.content.decode()[:2000]
    tool = Tool.objects.get(name="kb.search")
    created = AuditEntry.objects.get(action="agents.tool.create")
    assert created.actor_id == admin_user.pk and created.before is None
    assert created.after["name"] == "kb.search" and created.after["effectful"] is True

    client.post(
        f"/admin/agents/tool/{tool.pk}/change/", tool_form(effectful="on", high_impact="on")
    )
    changed = AuditEntry.objects.get(action="agents.tool.update")
    assert changed.before == {"high_impact": False} and changed.after == {"high_impact": True}

    client.post(f"/admin/agents/tool/{tool.pk}/delete/", {"post": "yes"})
    deleted = AuditEntry.objects.get(action="agents.tool.delete")
    assert deleted.before["name"] == "kb.search" and deleted.before["high_impact"] is True
    assert not Tool.objects.exists()


def test_deleting_selected_tools_audits_each(logged_in, admin_user):
    tools = [Tool.objects.create(name=name) for name in ("a.one", "b.two")]
    logged_in(admin_user).post(
        "/admin/agents/tool/",
        {"action": "delete_selected", "_selected_action": [t.pk for t in tools], "post": "yes"},
    )
    assert not Tool.objects.exists()
    entries = AuditEntry.objects.filter(action="agents.tool.delete")
    assert sorted(e.before["name"] for e in entries) == ["a.one", "b.two"]


def test_a_null_verifier_is_an_error_on_the_field_not_a_server_error(logged_in, admin_user):
    response = logged_in(admin_user).post("/admin/agents/tool/add/", tool_form(verifier="null"))
    assert response.status_code == 200
    assert "Give a JSON object" in response.content.decode()
    assert not Tool.objects.exists()
    assert not AuditEntry.objects.filter(action="agents.tool.create").exists()
