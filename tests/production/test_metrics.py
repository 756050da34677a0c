"""Production metrics over time, per version: volume, errors, latency p50/p95 (nearest rank),
tokens, cost and each online check's mean score, per hour or per day, in a constant number of
queries; the API and the page's embedded data agree; read with the agent's roles."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from production.choices import ScoreState
from production.models import TraceScore
from production.reads.metrics import production_metrics
from tests.support import factories, online
from tests.support.governance import api_client, grant_on


@pytest.fixture
def versions(agent):
    return agent.versions.get(number=1), factories.agent_version(agent, number=2)


def traces(agent, version, latencies, *, at, errors=0, cost="0.01", score=None):
    rows = []
    for n, latency in enumerate(latencies):
        row = online.trace(agent, version, {"input": "q", "output": "a"}, completed_at=at)
        row.received_at = at
        row.latency_ms = latency
        row.input_tokens, row.output_tokens = 10, 5
        row.has_error = n < errors
        row.cost_usd = Decimal(cost) if cost is not None else None
        row.save()
        if score is not None:
            TraceScore.objects.create(
                trace=row,
                agent=agent,
                agent_version=version,
                state=ScoreState.SCORED,
                completed_at=at,
                claimed_at=at,
                results=[{"label": "polite", "score": score}, {"label": "shape", "score": None}],
            )
        rows.append(row)
    return rows


def test_the_figures_per_hour_and_version(agent, versions):
    v1, v2 = versions
    now = timezone.now().replace(minute=30)
    hour_ago = now - timedelta(hours=1)
    traces(agent, v1, [float(n) for n in range(1, 11)], at=hour_ago, errors=2, score=0.5)
    traces(agent, v2, [100.0, 300.0], at=now, cost=None, score=1.0)
    metrics = production_metrics(agent, "48h", now=now)
    assert metrics["bucket"] == "hour" and len(metrics["buckets"]) == 49
    first = metrics["versions"]["v1"]
    i = metrics["buckets"].index(hour_ago.replace(minute=0, second=0, microsecond=0))
    assert first["volume"][i] == 10 and first["errors"][i] == 2
    assert first["error_rate"][i] == pytest.approx(0.2)
    assert first["latency_p50_ms"][i] == 5.0  # the 5th of 10 (nearest rank)
    assert first["latency_p95_ms"][i] == 10.0  # the 10th: ceil(9.5)
    assert first["tokens"][i] == 150
    assert first["cost_usd"][i] == pytest.approx(0.10)
    assert first["checks"]["polite"][i] == pytest.approx(0.5)
    assert "shape" not in first["checks"]  # no score: nothing to average
    second = metrics["versions"]["v2"]
    assert second["volume"][-1] == 2 and second["latency_p95_ms"][-1] == 300.0
    assert second["cost_usd"][-1] is None and second["unpriced"][-1] == 2  # never $0
    assert first["volume"][-1] == 0 and first["latency_p50_ms"][-1] is None

    daily = production_metrics(agent, "30d", now=now)
    assert daily["bucket"] == "day" and len(daily["buckets"]) == 31
    assert sum(daily["versions"]["v1"]["volume"]) == 10


def test_a_constant_number_of_queries_as_traces_grow(
    agent, versions, django_assert_max_num_queries
):
    now = timezone.now()
    traces(agent, versions[0], [1.0] * 3, at=now, score=0.3)
    with django_assert_max_num_queries(4) as few:
        production_metrics(agent, now=now)
    traces(agent, versions[0], [2.0] * 40, at=now - timedelta(hours=3), score=0.7)
    traces(agent, versions[1], [3.0] * 40, at=now - timedelta(hours=5), score=0.9)
    with django_assert_max_num_queries(len(few.captured_queries)):
        production_metrics(agent, now=now)


def test_the_api_answers_the_same_and_refuses_a_bad_range(agent, versions, builder, client):
    now = timezone.now()
    traces(agent, versions[0], [1.0, 2.0], at=now)
    api = api_client(builder)
    body = api.get(f"/api/v1/agents/{agent.slug}/production/metrics/").json()
    assert body["bucket"] == "hour" and sum(body["versions"]["v1"]["volume"]) == 2
    bad = api.get(f"/api/v1/agents/{agent.slug}/production/metrics/", {"range": "1y"})
    assert bad.status_code == 400 and bad.json()["field"] == "range"
    stranger = grant_on(factories.user("stranger"), "Builder", factories.agent("other-bot"))
    hidden = api_client(stranger).get(f"/api/v1/agents/{agent.slug}/production/metrics/")
    assert hidden.status_code == 404
    client.force_login(builder)
    page = client.get(f"/production/agents/{agent.slug}/").content.decode()
    assert 'id="metrics-data"' in page and 'id="chart-latency"' in page
