"""The API of online scoring: the production contract of an agent (windows, gate, rule,
spend, lag, open proposal) in a constant number of queries, the rule written through the
actions (201 then 200, every bad field in the one error shape, 403 for other roles, 404 for a
hidden agent), and the proposal verbs for a Publisher."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from production.models import OnlineRule
from production.online import scoring
from tests.support import factories, online
from tests.support.governance import api_client, grant_on, used_client

URL = "/api/v1/agents/{}/production/"
RULE = "/api/v1/agents/{}/online-rule/"
CHECK = {"label": "shape", "kind": "output_type", "params": {"type": "text"}}


@pytest.fixture
def agent(db):
    return factories.agent("support-bot")


def test_a_builder_writes_the_rule_and_reads_it_back(agent, builder):
    client = api_client(builder)
    created = client.put(
        RULE.format(agent.slug), {"checks": [CHECK], "sampling_rate": 0.5}, format="json"
    )
    assert created.status_code == 201, created.content
    assert created.json()["sampling_rate"] == 0.5
    changed = client.put(RULE.format(agent.slug), {"daily_cap_usd": "3"}, format="json")
    assert changed.status_code == 200 and changed.json()["daily_cap_usd"] == "3.0000"
    assert client.get(RULE.format(agent.slug)).json()["checks"][0]["label"] == "shape"


def test_bad_fields_are_named_in_the_one_error_shape(agent, builder):
    answer = api_client(builder).put(
        RULE.format(agent.slug),
        {"sampling_rate": 7, "filters": "env=prod"},
        format="json",
    )
    assert answer.status_code == 400
    body = answer.json()
    assert (body["code"], body["field"]) == ("invalid", "sampling_rate")
    assert [error["field"] for error in body["errors"]] == ["sampling_rate", "filters"]
    assert not OnlineRule.objects.exists()


def test_other_roles_are_refused_and_hidden_agents_are_404(agent, publisher):
    assert api_client(publisher).put(RULE.format(agent.slug), {}, format="json").status_code == 403
    outsider = factories.user("nobody")
    grant_on(outsider, "Builder", factories.agent("other-bot"))
    assert api_client(outsider).get(URL.format(agent.slug)).status_code == 404
    assert api_client(outsider).put(RULE.format(agent.slug), {}, format="json").status_code == 404


def test_the_production_contract_in_constant_queries(agent, builder, admin_user, publisher):
    from governance.models import PublishingPolicy
    from tests.support.governance import TOOLS_CHECK, tool_case

    gate = factories.dataset("gate-basics")
    factories.dataset_version(gate, cases=[tool_case("a", "?")], checks=[TOOLS_CHECK])
    PublishingPolicy.objects.create(name="Default", created_by=admin_user).gate_datasets.add(gate)
    author = factories.user("author", role="Builder")
    _, live = online.live_after(agent, author, publisher)
    api_client(builder).put(RULE.format(agent.slug), {"checks": [CHECK]}, format="json")
    client = used_client(builder)

    def queries():
        with CaptureQueriesContext(connection) as captured:
            answer = client.get(URL.format(agent.slug))
        assert answer.status_code == 200
        return len(captured), answer.json()

    scoring.score_traces([online.trace(agent, live, {"output": "hi"}).pk])
    queries()  # the first request of a key writes its use
    few, body = queries()
    assert body["live_version"] == live.number
    assert [w["name"] for w in body["windows"]] == ["24 h", "7 d"]
    assert body["windows"][0]["contract"]["runs"] == 1
    assert body["gate"]["contract"]["runs"] >= 1
    assert body["lag_ms_24h"]["scored"] == 1 and body["open_proposal"] is None
    scoring.score_traces([online.trace(agent, live, {"output": "hi"}).pk for _ in range(20)])
    many, body = queries()
    assert body["windows"][1]["contract"]["runs"] == 21
    assert many == few
