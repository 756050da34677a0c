# ruff: noqa: F811 - the role matrix's fixtures are imported here, then used as arguments
"""A version's tool policy (tools offered, tools denied) through the API, by tool name, through
the same actions as the admin: CreateDraftVersion on POST, UpdateDraftVersion on PATCH. Only a
Builder (or Admin) of the agent may set it; every change is audited; a frozen version's tools
do not change; an unknown tool name is refused naming it."""

import pytest

from agents.models import AgentVersion, Tool
from evaluations.models import Run
from governance.models import AuditEntry
from tests.governance.conftest import (  # noqa: F401 - fixtures
    agent,
    gate_dataset,
    other_agent,
    other_dataset,
    persona,
)
from tests.support import factories
from tests.support.governance import BUILDERS, PERSONAS, api_client

ECHO = {"callable": "tests.support.agents_under_test.echo"}


@pytest.fixture
def tools(db):
    Tool.objects.create(name="kb.search")
    Tool.objects.create(name="orders.lookup")
    Tool.objects.create(name="accounts.delete", high_impact=True, effectful=True)


def body(**extra):
    return {"agent": "support-bot", "adapter": "python", "config": ECHO, **extra}


def names(manager):
    return sorted(manager.values_list("name", flat=True))


@pytest.mark.parametrize("role, scope", PERSONAS)
def test_only_a_builder_of_the_agent_sets_tools_on_a_new_version(
    role, scope, persona, agent, tools
):
    user = persona(role, scope)
    response = api_client(user).post(
        "/api/v1/versions/",
        body(tools=["kb.search", "accounts.delete"], denied_tools=["accounts.delete"]),
        format="json",
    )
    if (role, scope) in BUILDERS:
        assert response.status_code == 201, response.json()
        assert response.json()["tools"] == ["accounts.delete", "kb.search"]
        assert response.json()["denied_tools"] == ["accounts.delete"]
        version = AgentVersion.objects.get(pk=response.json()["id"])
        assert names(version.tools) == ["accounts.delete", "kb.search"]
        entry = AuditEntry.objects.get(action="agents.version.create")
        assert entry.after["tools"] == ["accounts.delete", "kb.search"]
        assert entry.after["denied_tools"] == ["accounts.delete"]
    else:
        # Not visible to them (400: no such agent for this user) or visible but not theirs (403)
        assert response.status_code in (400, 403)
        assert not AgentVersion.objects.exists()


def test_an_unknown_tool_name_is_refused_naming_it(persona, agent, tools):
    client = api_client(persona("Builder", "here"))
    response = client.post("/api/v1/versions/", body(tools=["kb.serch"]), format="json")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "tools: no tool named 'kb.serch' for support-bot: register it for the agent "
        "(Builder), or ask an Admin to share one",
        "code": "does_not_exist",
        "field": "tools",
    }
    response = client.post("/api/v1/versions/", body(denied_tools="kb.search"), format="json")
    assert response.status_code == 400 and response.json()["field"] == "denied_tools"
    response = client.post(
        "/api/v1/versions/", body(tools=["kb.search", "kb.search"]), format="json"
    )
    assert response.json() == {
        "detail": "tools: 'kb.search' is listed twice",
        "code": "invalid",
        "field": "tools",
    }
    assert not AgentVersion.objects.exists()


@pytest.mark.parametrize("role, scope", PERSONAS)
def test_only_a_builder_changes_a_drafts_tools_and_the_audit_says_so(
    role, scope, persona, agent, tools
):
    version = factories.agent_version(agent)
    version.tools.set(Tool.objects.filter(name="kb.search"))
    response = api_client(persona(role, scope)).patch(
        f"/api/v1/versions/{version.pk}/",
        {"tools": ["kb.search", "orders.lookup"], "notes": "adds the lookup"},
        format="json",
    )
    if (role, scope) in BUILDERS:
        assert response.status_code == 200, response.json()
        assert response.json()["tools"] == ["kb.search", "orders.lookup"]
        assert names(version.tools) == ["kb.search", "orders.lookup"]
        entry = AuditEntry.objects.get(action="agents.version.update")
        assert entry.before["tools"] == ["kb.search"]
        assert entry.after["tools"] == ["kb.search", "orders.lookup"]
        assert entry.after["notes"] == "adds the lookup"
    else:
        assert response.status_code in (403, 404)
        assert names(version.tools) == ["kb.search"]
        assert not AuditEntry.objects.filter(action="agents.version.update").exists()


def test_a_frozen_versions_tools_do_not_change(persona, agent, tools, gate_dataset):
    version = factories.agent_version(agent)
    Run.objects.create(agent_version=version, dataset_version=factories.dataset_version())
    response = api_client(persona("Builder", "here")).patch(
        f"/api/v1/versions/{version.pk}/", {"denied_tools": ["accounts.delete"]}, format="json"
    )
    assert response.status_code == 409 and response.json()["code"] == "version_frozen"
    assert names(version.denied_tools) == []
    # Its notes still may.
    response = api_client(persona("Builder", "global")).patch(
        f"/api/v1/versions/{version.pk}/", {"notes": "kept for the record"}, format="json"
    )
    assert response.status_code == 200 and response.json()["notes"] == "kept for the record"


def test_a_bad_config_in_a_patch_names_the_field(persona, agent, tools):
    version = factories.agent_version(agent)
    response = api_client(persona("Builder", "here")).patch(
        f"/api/v1/versions/{version.pk}/", {"config": {"kwarg": 1}}, format="json"
    )
    assert response.status_code == 400 and response.json()["field"] == "config"
    version.refresh_from_db()
    assert version.config == ECHO


def test_the_admin_changes_a_drafts_tools_through_the_action(client, persona, agent, tools):
    builder = persona("Builder", "here")
    version = factories.agent_version(agent)
    client.force_login(builder)
    tool_ids = list(Tool.objects.filter(name__in=["kb.search"]).values_list("pk", flat=True))
    response = client.post(
        f"/admin/agents/agentversion/{version.pk}/change/",
        {
            "adapter": "python",
            "config": '{"callable": "tests.support.agents_under_test.echo"}',
            "tools": tool_ids,
            "denied_tools": [],
            "notes": "offers the search",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert names(version.tools) == ["kb.search"]
    entry = AuditEntry.objects.get(action="agents.version.update")
    assert entry.actor_id == builder.pk
    assert (entry.before["tools"], entry.after["tools"]) == ([], ["kb.search"])


def test_an_update_holding_a_stale_draft_is_refused_once_the_version_left_draft(persona, agent):
    from agents.actions.update_draft_version import UpdateDraftVersion
    from sherlock.core.errors import ActionConflict

    stale = factories.agent_version(agent)
    AgentVersion.objects.filter(pk=stale.pk).update(state="published")  # by another request

    with pytest.raises(ActionConflict) as refused:
        UpdateDraftVersion(
            acting_user=persona("Builder", "here"), version=stale, config={**ECHO, "x": 1}
        ).execute()

    assert refused.value.code == "version_frozen"
    assert AgentVersion.objects.get(pk=stale.pk).config == ECHO
