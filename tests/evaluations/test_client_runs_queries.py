"""A client run's work list and uploads cost a constant number of queries, however many items:
a page of 5 work items or 50, a batch of 2 transcripts or 40."""

from agents.models import AgentVersion
from evaluations.actions.start_run import StartRun
from tests.support import factories

CHECKS = [{"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}]


def client_run(builder, cases, repetitions=1):
    agent = factories.agent(f"bot-{cases}")
    version = AgentVersion.objects.create(agent=agent, number=1, adapter="client", config={})
    frozen = factories.dataset_version(
        factories.dataset(f"data-{cases}"),
        cases=[(f"case-{i:03}", f"question {i}", {}) for i in range(cases)],
        checks=CHECKS,
    )
    return StartRun(
        acting_user=builder,
        agent_version=version,
        dataset_version=frozen,
        repetitions=repetitions,
    ).execute()


def queries_of(call):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        response = call()
    assert response.status_code == 200, response.json()
    return len(captured.captured_queries), response.json()


def test_the_work_list_costs_the_same_for_5_items_or_50(builder):
    api = factories.api(builder)
    small, large = client_run(builder, 5), client_run(builder, 25, repetitions=2)
    api.get(f"/api/v1/runs/{small.pk}/work/")  # warm: the first request loads what it caches
    few, page = queries_of(lambda: api.get(f"/api/v1/runs/{small.pk}/work/"))
    many, full = queries_of(lambda: api.get(f"/api/v1/runs/{large.pk}/work/?page_size=500"))
    assert len(page["results"]) == 5 and len(full["results"]) == 50
    assert many == few


def test_an_upload_costs_the_same_for_2_items_or_40(builder):
    api = factories.api(builder)
    small, large = client_run(builder, 2), client_run(builder, 20, repetitions=2)

    def upload(run):
        work = api.get(f"/api/v1/runs/{run.pk}/work/?page_size=500").json()["results"]
        items = [{"key": item["key"], "transcript": {"output": "ok"}} for item in work]
        return lambda: api.post(f"/api/v1/runs/{run.pk}/transcripts/", {"items": items})

    queries_of(upload(client_run(builder, 1)))  # warm
    few, answer = queries_of(upload(small))
    many, bigger = queries_of(upload(large))
    assert answer["accepted"] == 2 and bigger["accepted"] == 40
    assert many == few


def test_ensure_names_the_agent_by_slug_or_id(builder, outsider):
    agent = factories.agent("support-bot")
    api = factories.api(builder)
    body = {"name": "abc", "adapter": "client", "config": {}}
    by_id = api.post("/api/v1/versions/ensure/", {"agent": agent.pk, **body}, format="json")
    assert by_id.status_code == 201, by_id.json()
    by_slug = api.post("/api/v1/versions/ensure/", {"agent": "support-bot", **body}, format="json")
    assert by_slug.status_code == 200 and by_slug.json()["id"] == by_id.json()["id"]
    hidden = factories.api(outsider).post(
        "/api/v1/versions/ensure/", {"agent": agent.pk, **body}, format="json"
    )
    assert hidden.status_code == 400 and hidden.json()["field"] == "agent"


def test_an_unknown_agent_gets_the_words_an_unknown_dataset_gets(builder):
    body = {"agent": "suport-bot", "name": "abc", "adapter": "client", "config": {}}
    refused = factories.api(builder).post("/api/v1/versions/ensure/", body, format="json")
    assert refused.status_code == 400
    assert refused.json()["detail"] == "agent: no agent 'suport-bot' (or you may not see it)"
    assert "Object with" not in refused.content.decode()
