"""The agent version's config in the admin, per adapter: the chosen adapter's
settings are fields of their own, built from its SCHEMA, described, linked to its section of
docs/adapters.md, validated with every error on its field at once; what has no field (kwargs,
headers, tools, a secret) stays JSON, and the JSON box still takes any setting."""

import pytest

from agents.models import AgentVersion
from governance.models import AuditEntry
from tests.support import factories

pytestmark = pytest.mark.django_db

ADD = "/admin/agents/agentversion/add/"


@pytest.fixture
def agent(db):
    return factories.agent("billing-bot")


@pytest.fixture
def loopback(settings):
    settings.SHERLOCK_AGENT_HOSTS = ["*", "127.0.0.1"]


def post(client, agent, **fields):
    return client.post(ADD, {"agent": agent.pk, "notes": "", "config": "", **fields})


def test_the_add_page_has_a_described_field_per_setting_and_links_the_docs(
    logged_in, builder, agent
):
    html = logged_in(builder).get(ADD).content.decode()
    assert 'name="http__url"' in html and 'name="http__timeout"' in html
    assert 'name="openai_chat__max_turns"' in html and 'name="python__callable"' in html
    assert "Where each case is POSTed as JSON" in html  # the schema's description
    assert 'href="/admin/evaluations/check/docs/adapters/#http"' in html
    assert 'class="module aligned adapter-settings adapter-http"' in html
    assert "Advanced settings (JSON)" in html


def test_the_linked_section_exists_on_the_served_docs(logged_in, builder):
    html = logged_in(builder).get("/admin/evaluations/check/docs/adapters/").content.decode()
    for adapter in ("python", "http", "openai_chat", "replay"):
        assert f'id="{adapter}"' in html, adapter


def test_an_http_agent_is_registered_from_its_fields(logged_in, builder, agent, loopback):
    response = post(
        logged_in(builder),
        agent,
        adapter="http",
        http__url="http://127.0.0.1:9/agent",
        http__timeout="5",
        config='{"headers": {"X-Team": "billing"}}',
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    version = AgentVersion.objects.get(agent=agent)
    assert version.config == {
        "headers": {"X-Team": "billing"},
        "url": "http://127.0.0.1:9/agent",
        "timeout": 5.0,
    }
    assert AuditEntry.objects.filter(action="agents.version.create").exists()


def test_every_error_is_on_its_field_at_once(logged_in, builder, agent):
    response = post(
        logged_in(builder), agent, adapter="http", http__url="ftp://x", http__timeout="0"
    )
    errors = response.context["adminform"].form.errors
    assert errors["http__url"] == ["must start with http:// or https://"]
    assert errors["http__timeout"] == ["must be more than 0"]
    assert "config" not in errors  # said once, on the fields
    assert not AgentVersion.objects.exists()


def test_a_required_setting_left_empty_is_required_on_its_field(logged_in, builder, agent):
    response = post(logged_in(builder), agent, adapter="openai_chat", openai_chat__model="m")
    errors = response.context["adminform"].form.errors
    assert errors["openai_chat__base_url"] == ["is required"]
    assert "openai_chat__model" not in errors


def test_a_bound_the_form_knows_is_told_before_the_schema(logged_in, builder, agent):
    response = post(
        logged_in(builder),
        agent,
        adapter="openai_chat",
        openai_chat__base_url="http://127.0.0.1:9/v1",
        openai_chat__model="m",
        openai_chat__max_turns="99",
    )
    assert "less than or equal to 50" in " ".join(
        response.context["adminform"].form.errors["openai_chat__max_turns"]
    )


def test_only_the_chosen_adapters_fields_are_used(logged_in, builder, agent, loopback):
    response = post(
        logged_in(builder),
        agent,
        adapter="http",
        http__url="http://127.0.0.1:9/agent",
        openai_chat__model="ignored",
    )
    assert response.status_code == 302
    assert AgentVersion.objects.get().config == {"url": "http://127.0.0.1:9/agent"}


def test_the_raw_json_alone_still_works(logged_in, builder, agent):
    response = post(
        logged_in(builder),
        agent,
        adapter="python",
        config='{"callable": "tests.support.agents_under_test.echo"}',
    )
    assert response.status_code == 302
    assert AgentVersion.objects.get().config == {"callable": "tests.support.agents_under_test.echo"}


def test_an_unknown_setting_in_the_json_is_told_on_the_json_box(logged_in, builder, agent):
    response = post(
        logged_in(builder),
        agent,
        adapter="python",
        python__callable="tests.support.agents_under_test.echo",
        config='{"colour": "blue"}',
    )
    assert response.context["adminform"].form.errors["config"] == [
        "config.colour: is not a known setting"
    ]


def test_a_draft_opens_with_its_settings_in_their_fields(logged_in, builder, agent):
    version = factories.agent_version(agent, kwargs={"style": "careful"})
    client = logged_in(builder)
    form = client.get(f"/admin/agents/agentversion/{version.pk}/change/").context["adminform"].form
    assert form["python__callable"].value() == "tests.support.agents_under_test.echo"
    assert form["config"].value() == '{"kwargs": {"style": "careful"}}'


def test_a_frozen_version_shows_its_config_read_only_without_setting_fields(
    logged_in, builder, agent
):
    version = factories.agent_version(agent)
    AgentVersion.objects.filter(pk=version.pk).update(state="published")
    html = logged_in(builder).get(f"/admin/agents/agentversion/{version.pk}/change/")
    html = html.content.decode()
    assert 'name="python__callable"' not in html and "adapter-settings" not in html
    assert "agents_under_test.echo" in html
