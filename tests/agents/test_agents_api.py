# ruff: noqa: F811 - the role matrix's fixtures are imported here, then used as arguments
"""Agents and versions through the API: listed through `for_user`, 404 for what a user may not
see, created through the actions, in a constant number of queries."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import AgentVersion
from governance.models import AuditEntry
from tests.governance.conftest import (  # noqa: F401 - fixtures
    agent,
    gate_dataset,
    other_agent,
    other_dataset,
    persona,
)
from tests.support import factories
from tests.support.governance import api_client


def test_a_global_role_lists_every_agent_and_a_scoped_one_only_its_own(persona, agent, other_agent):
    everyone = api_client(persona("Publisher", "global")).get("/api/v1/agents/").json()
    assert [a["slug"] for a in everyone["results"]] == ["other-bot", "support-bot"]
    scoped = api_client(persona("Publisher", "here")).get("/api/v1/agents/").json()
    assert [a["slug"] for a in scoped["results"]] == ["support-bot"]


def test_an_agent_one_may_not_see_is_not_found(persona, agent, outsider):
    for user in (outsider, persona("Builder", "other")):
        assert api_client(user).get(f"/api/v1/agents/{agent.slug}/").status_code == 404
    version = factories.agent_version(agent)
    assert api_client(outsider).get(f"/api/v1/versions/{version.pk}/").status_code == 404


def test_a_builder_registers_an_agent_and_the_audit_says_so(builder):
    response = api_client(builder).post(
        "/api/v1/agents/", {"slug": "triage-bot", "name": "Triage"}, format="json"
    )
    assert response.status_code == 201 and response.json()["owner"] == "builder"
    assert AuditEntry.objects.get(action="agents.agent.create").actor_id == builder.pk


@pytest.mark.parametrize("who", ["publisher", "editor"])
def test_other_roles_may_not_register_agents(who, request):
    response = api_client(request.getfixturevalue(who)).post(
        "/api/v1/agents/", {"slug": "x-bot", "name": "X"}, format="json"
    )
    assert response.status_code == 403


def test_a_scoped_builder_creates_drafts_of_its_agent_only(persona, agent, other_agent):
    client = api_client(persona("Builder", "here"))
    body = {
        "agent": "support-bot",
        "adapter": "python",
        "config": {"callable": "tests.support.agents_under_test.echo"},
    }
    created = client.post("/api/v1/versions/", body, format="json")
    assert created.status_code == 201, created.json()
    assert (created.json()["number"], created.json()["state"]) == (1, "draft")
    elsewhere = client.post("/api/v1/versions/", {**body, "agent": "other-bot"}, format="json")
    assert elsewhere.status_code == 400  # not visible: "does not exist" for this user
    assert not AgentVersion.objects.filter(agent=other_agent).exists()


def test_a_publisher_may_not_create_drafts(publisher, agent):
    body = {
        "agent": agent.slug,
        "adapter": "python",
        "config": {"callable": "tests.support.agents_under_test.echo"},
    }
    assert api_client(publisher).post("/api/v1/versions/", body, format="json").status_code == 403


def test_versions_filter_by_agent_and_state(builder, agent, other_agent):
    factories.agent_version(agent)
    factories.agent_version(other_agent)
    body = (
        api_client(builder)
        .get("/api/v1/versions/", {"agent": "other-bot", "state": "draft"})
        .json()
    )
    assert [(v["agent"], v["number"]) for v in body["results"]] == [("other-bot", 1)]


@pytest.mark.parametrize("url", ["/api/v1/agents/", "/api/v1/versions/"])
def test_lists_take_a_constant_number_of_queries(
    url, django_assert_num_queries, persona, agent, other_agent
):
    client = api_client(persona("Builder", "here"))
    factories.agent_version(agent)
    client.get(url)  # the key's first use records its last_used_at: not the list's cost
    with CaptureQueriesContext(connection) as first:
        client.get(url)
    for number in range(3):
        factories.agent_version(agent)
        factories.agent(f"more-{number}")
    with django_assert_num_queries(len(first)):
        client.get(url)
