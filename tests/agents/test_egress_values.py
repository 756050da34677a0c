"""What a config may make an HTTP client send, beyond the review's attacks
(tests/agents/test_egress_review2.py): the messages a Builder reads when a prefix, a value or
a host name is refused, the engine's own (async) clients, and a value that is fine going out.
"""

import asyncio

import pytest

from agents.adapters import AgentCallError, call_agent, prepare, validate_config
from agents.models import AgentVersion
from evaluations.models import Trial
from sherlock.core.aio import aclose_loop_clients
from sherlock.core.egress import EgressRefused, check_destination, header_value_error
from tests.support import factories
from tests.support.governance import api_client
from tests.support.loopback_agent import LoopbackAgent
from tests.support.schedules import SHAPE

SECRET = "bot-token-7f3a9c"


@pytest.fixture
def listener():
    with LoopbackAgent() as server:
        yield server


@pytest.fixture
def agent(builder):
    return factories.agent(owner=builder)


def create(builder, adapter, config):
    body = {"agent": "support-bot", "adapter": adapter, "config": config}
    return api_client(builder).post("/api/v1/versions/", body, format="json")


@pytest.mark.parametrize("prefix", [" ", " Bearer ", "Bearer\n", "Bearer\t", "Bärer "])
def test_a_prefix_no_header_may_hold_is_refused_on_its_field(builder, agent, listener, prefix):
    config = {
        "url": listener.url,
        "headers": {"X-Key": {"env": "SUPPORT_BOT_TOKEN", "prefix": prefix}},
    }

    response = create(builder, "http", config)

    assert response.status_code == 400, response.json()
    assert "config.headers.X-Key.prefix: must be visible ASCII" in response.json()["detail"]


def test_an_api_keys_prefix_follows_the_same_rule():
    config = {"base_url": "https://api.example.com/v1", "model": "m"}
    config["api_key"] = {"env": "SUPPORT_OPENAI_KEY", "prefix": "\n"}

    with pytest.raises(ValueError, match=r"config\.api_key\.prefix: must be visible ASCII"):
        validate_config("openai_chat", config)


def test_a_usual_prefix_and_value_are_sent(builder, agent, listener, settings, monkeypatch):
    settings.SHERLOCK_AGENT_ENV = ["SUPPORT_BOT_TOKEN"]
    settings.SHERLOCK_AGENT_HOSTS = ["127.0.0.1"]
    monkeypatch.setenv("SUPPORT_BOT_TOKEN", SECRET)
    headers = {"Authorization": {"env": "SUPPORT_BOT_TOKEN", "prefix": "Bearer "}}
    assert create(builder, "http", {"url": listener.url, "headers": headers}).status_code == 201

    call_agent(AgentVersion.objects.get(), {"id": "c1", "input": "hi"})

    assert listener.requests[0]["headers"]["authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (SECRET + "\n", "line break"),
        (SECRET + "\r\n", "line break"),
        ("a\x01b", "control character"),
        ("tökén", "not ASCII"),
        (" " + SECRET, "whitespace"),
        (SECRET + " ", "whitespace"),
    ],
)
def test_a_value_no_header_may_hold_is_named_by_its_variable_not_shown(
    builder,
    agent,
    listener,
    settings,
    monkeypatch,
    django_capture_on_commit_callbacks,
    value,
    problem,
):
    settings.SHERLOCK_AGENT_ENV = ["SUPPORT_BOT_TOKEN"]
    settings.SHERLOCK_AGENT_HOSTS = ["127.0.0.1"]
    monkeypatch.setenv("SUPPORT_BOT_TOKEN", value)
    headers = {"Authorization": {"env": "SUPPORT_BOT_TOKEN"}}
    assert create(builder, "http", {"url": listener.url, "headers": headers}).status_code == 201
    dataset_version = factories.dataset_version(cases=[("c1", "hi", {})], checks=[SHAPE])

    run = factories.start_run(
        builder, AgentVersion.objects.get(), dataset_version, django_capture_on_commit_callbacks
    )

    error = Trial.objects.get(run=run).error
    assert "environment variable SUPPORT_BOT_TOKEN cannot be sent in a header" in error
    assert problem in error and value.strip() not in error
    assert listener.requests == []
    assert header_value_error(value) is not None


def test_the_engines_openai_client_sends_nothing_from_the_sdks_environment(
    builder, agent, monkeypatch
):
    """The run engine's own client (`acall`: AsyncOpenAI through aiohttp, on the shard's loop),
    as the review's test checks the one-off path's (OpenAI). The tests' sync mode runs shards
    on the blocking path, so the loop is played here."""
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "X-Gateway-Key: gw-secret-1")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-secret-2")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-secret-3")
    message = {"role": "assistant", "content": "done"}
    answer = {"choices": [{"message": message, "finish_reason": "stop"}]}
    with LoopbackAgent(answer=lambda request: (200, answer)) as llm:
        config = {"base_url": f"{llm.url}/v1", "model": "m", "max_retries": 0}
        assert create(builder, "openai_chat", config).status_code == 201
        prepared = prepare(AgentVersion.objects.get())

        async def call():
            try:
                return await prepared.acall({"id": "c1", "input": "hi"})
            finally:
                await aclose_loop_clients()

        transcript = asyncio.run(call())

    assert transcript["output"] == "done"
    headers = [r["headers"] for r in llm.requests]
    assert [h["x-stainless-async"] for h in headers] == ["async:asyncio"]
    sent = repr(headers)
    assert not any(v in sent for v in ("gw-secret", "org-secret", "proj-secret")), sent


@pytest.mark.parametrize(
    ("url", "phrase"),
    [
        ("http://faß.example.com/", "fass.example.com under IDNA 2003 and xn--fa-hia.example.com"),
        ("http://ｅxample.com/", r"is not a valid internationalised \(IDNA\) name"),
    ],
)
def test_a_name_spelled_two_ways_is_refused(settings, url, phrase):
    settings.SHERLOCK_AGENT_HOSTS = ["*"]

    with pytest.raises(EgressRefused, match=phrase):
        check_destination(url, "SHERLOCK_AGENT_HOSTS")


def test_a_name_spelled_one_way_is_checked_as_its_ascii_name(settings):
    settings.SHERLOCK_AGENT_HOSTS = ["xn--bcher-kva.example"]  # an operator lists the ASCII name

    assert check_destination("https://Bücher.example/x", "SHERLOCK_AGENT_HOSTS") == (
        "xn--bcher-kva.example"
    )


def test_a_run_refuses_a_stored_name_spelled_two_ways(builder, agent, listener, settings):
    """Saved before the rule (written around the API): refused when it is prepared."""
    settings.SHERLOCK_AGENT_HOSTS = ["*"]
    version = AgentVersion.objects.create(
        agent=agent, number=1, adapter="http", config={"url": "http://faß.example.com/"}
    )

    with pytest.raises(AgentCallError, match="IDNA 2003"):
        call_agent(version, {"id": "c1", "input": "hi"})
