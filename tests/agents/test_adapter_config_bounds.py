"""What an agent's config may not hold, refused when the version is saved (400 naming the field)
instead of failing every trial at run time: a header with a line break or one the connection
owns (`Host`, hop-by-hop), and a `python` callable's keyword arguments that do not fit it."""

import pytest

from agents.models import AgentVersion
from tests.support import factories


@pytest.fixture
def api(builder):
    factories.agent("support-bot")
    return factories.api(builder)


def save(api, adapter, config):
    body = {"agent": "support-bot", "adapter": adapter, "config": config}
    return api.post("/api/v1/versions/", body, format="json")


@pytest.mark.parametrize(
    "headers, field, words",
    [
        ({"X-Team": "a\r\nX-Evil: 1"}, "config.headers.X-Team", "line break"),
        ({"X-Team": "a\nb"}, "config.headers.X-Team", "line break"),
        ({"X-Bad\r\nName": "a"}, "config.headers", "not a header name"),
        ({"Host": "internal.example"}, "config.headers.Host", "set by the connection"),
        ({"Transfer-Encoding": "chunked"}, "config.headers.Transfer-Encoding", "connection"),
        ({"connection": "close"}, "config.headers.connection", "set by the connection"),
        ({"X-Team": "a\x01"}, "config.headers.X-Team", "control character"),
    ],
)
def test_an_http_agents_bad_header_is_refused_at_save(api, headers, field, words):
    answer = save(api, "http", {"url": "http://127.0.0.1:9/agent", "headers": headers})
    assert answer.status_code == 400, answer.json()
    assert answer.json()["detail"].startswith(field) and words in answer.json()["detail"]
    assert not AgentVersion.objects.exists()


def test_an_http_agent_with_plain_headers_is_saved(api):
    answer = save(
        api, "http", {"url": "http://127.0.0.1:9/agent", "headers": {"X-Team": "support"}}
    )
    assert answer.status_code == 201, answer.json()


def test_a_tool_executors_bad_header_is_refused_at_save(api):
    config = {
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "tools": {"orders.lookup": {"url": "http://127.0.0.1:9/t", "headers": {"Host": "x"}}},
    }
    answer = save(api, "openai_chat", config)
    assert answer.status_code == 400
    assert "Host: set by the connection" in answer.json()["detail"]


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({}, "missing a required argument: 'greeting'"),
        ({"greeting": "Hi", "tone": "warm"}, "unexpected keyword argument 'tone'"),
    ],
)
def test_a_python_agents_arguments_are_checked_against_its_callable(api, kwargs, words):
    config = {"callable": "tests.support.agents_under_test.greeter", "kwargs": kwargs}
    answer = save(api, "python", config)
    assert answer.status_code == 400, answer.json()
    assert answer.json()["detail"].startswith("config.kwargs:") and words in answer.json()["detail"]


def test_a_python_agent_whose_arguments_fit_is_saved(api):
    config = {"callable": "tests.support.agents_under_test.greeter", "kwargs": {"greeting": "Hi"}}
    assert save(api, "python", config).status_code == 201
