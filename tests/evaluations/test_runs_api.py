"""The runs API: start a run (400 naming the field, 403 when the action refuses), read its
progress, spend and estimate, list only the runs the user may see in a constant number of
queries, and cancel it (409 once it has ended)."""

import pytest
from guardian.shortcuts import assign_perm

from evaluations.actions.start_run import StartRun
from evaluations.models import Run
from tests.support import factories
from tests.support.governance import api_client, used_client

SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}


@pytest.fixture
def version(db):
    return factories.agent_version()


@pytest.fixture
def dataset_version(db):
    return factories.dataset_version(cases=[("c1", "hi", {}), ("c2", "yo", {})], checks=[SHAPE])


def queued_run(user, version, dataset_version, capture):
    """A run whose shards are not enqueued (the on-commit callback is dropped): it stays queued."""
    with capture(execute=False):
        return StartRun(
            acting_user=user, agent_version=version, dataset_version=dataset_version
        ).execute()


def test_builder_starts_a_run_and_reads_its_progress(
    builder, version, dataset_version, django_capture_on_commit_callbacks
):
    body = {"agent_version": version.pk, "dataset_version": dataset_version.pk, "repetitions": 2}
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client(builder).post("/api/v1/runs/", body, format="json")
    assert response.status_code == 201, response.json()
    created = response.json()
    assert created["status"] == "queued"  # as it was when the action returned
    assert created["estimate"]["trials"] == 4 and created["estimate"]["calls"] == 4
    run = api_client(builder).get(f"/api/v1/runs/{created['id']}/").json()
    assert run["status"] == "completed"
    assert run["progress"] == {"done": 4, "total": 4, "errors": 0, "percent": 100.0}
    # An unknown cost is null with the calls counted, never 0.
    assert run["spend"] == {
        "usd": None,
        "usd_known": "0.00000000",
        "judge_usd": "0.00000000",
        "price_missing_calls": 4,
        "unpriced_calls": 4,
        "price_missing": True,
        "text": "price missing (4 calls)",
    }
    assert run["estimate"]["usd"] is None and run["estimate"]["price_missing_calls"] == 4
    assert run["agent"] == "support-bot" and run["dataset"] == "support-basics"
    assert run["summary"]["passed"] == 2


@pytest.mark.parametrize(
    "change, field",
    [
        ({"repetitions": 0}, "repetitions"),
        ({"repetitions": "many"}, "repetitions"),
        ({"agent_version": 999999}, "agent_version"),
        ({"dataset_version": None}, "dataset_version"),
    ],
)
def test_bad_input_answers_400_naming_the_field(builder, version, dataset_version, change, field):
    body = {"agent_version": version.pk, "dataset_version": dataset_version.pk, **change}
    response = api_client(builder).post("/api/v1/runs/", body, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == field
    assert not Run.objects.exists()


def test_a_gate_rule_refused_by_the_action_names_its_field(builder, version):
    empty = factories.dataset_version(dataset_obj=factories.dataset("empty"), checks=[SHAPE])
    body = {"agent_version": version.pk, "dataset_version": empty.pk}
    response = api_client(builder).post("/api/v1/runs/", body, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == "dataset_version"


def test_publisher_may_not_start_a_run(publisher, version, dataset_version):
    body = {"agent_version": version.pk, "dataset_version": dataset_version.pk}
    response = api_client(publisher).post("/api/v1/runs/", body, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert not Run.objects.exists()


def test_a_version_one_may_not_see_does_not_exist(outsider, version, dataset_version):
    body = {"agent_version": version.pk, "dataset_version": dataset_version.pk}
    response = api_client(outsider).post("/api/v1/runs/", body, format="json")
    assert response.status_code == 400 and response.json()["field"] == "agent_version"


def test_the_list_shows_only_runs_of_agents_the_user_may_see(
    builder, outsider, dataset_version, django_capture_on_commit_callbacks
):
    mine = factories.agent_version(factories.agent("mine"))
    theirs = factories.agent_version(factories.agent("theirs"))
    run_mine = queued_run(builder, mine, dataset_version, django_capture_on_commit_callbacks)
    queued_run(builder, theirs, dataset_version, django_capture_on_commit_callbacks)
    assert api_client(outsider).get("/api/v1/runs/").json()["results"] == []
    assign_perm("agents.view_agent", outsider, mine.agent)
    listed = api_client(outsider).get("/api/v1/runs/").json()["results"]
    assert [r["id"] for r in listed] == [run_mine.pk]
    other = Run.objects.exclude(pk=run_mine.pk).get()
    assert api_client(outsider).get(f"/api/v1/runs/{other.pk}/").status_code == 404


def test_the_list_costs_the_same_queries_for_one_run_or_many(
    builder, version, dataset_version, django_assert_num_queries, django_capture_on_commit_callbacks
):
    client = api_client(builder)
    queued_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
    # key + user, the new key's first use (last_used_at, written at most once a minute), the
    # user's and groups' permissions (guardian), count, page
    with django_assert_num_queries(6):
        assert len(client.get("/api/v1/runs/").json()["results"]) == 1
    for _ in range(4):
        other = factories.agent_version(version.agent)
        queued_run(builder, other, dataset_version, django_capture_on_commit_callbacks)
    # The same key, remembered by this process: its re-check, count, page.
    with django_assert_num_queries(3):
        assert len(client.get("/api/v1/runs/").json()["results"]) == 5
    client = api_client(builder)  # a new key, read for the first time
    with django_assert_num_queries(6):
        assert len(client.get("/api/v1/runs/").json()["results"]) == 5


def test_the_detail_costs_the_same_queries_for_few_trials_or_many(
    builder,
    version,
    dataset_version,
    django_assert_num_queries,
    django_capture_on_commit_callbacks,
):
    capture = django_capture_on_commit_callbacks
    small = factories.start_run(builder, version, dataset_version, capture)
    many = factories.dataset_version(
        dataset_obj=factories.dataset("many"),
        cases=[(f"c{i}", "hi", {}) for i in range(12)],
        checks=[SHAPE],
    )
    large = factories.start_run(builder, version, many, capture, reps=3)
    assert (small.trials.count(), large.trials.count()) == (2, 36)
    api_client(builder).get(f"/api/v1/runs/{small.pk}/")  # the process's content-type cache
    for run in (small, large):
        client = used_client(builder)
        # A key's first read: key + user, the user's and groups' permissions (guardian), the run.
        with django_assert_num_queries(4):
            assert client.get(f"/api/v1/runs/{run.pk}/").json()["id"] == run.pk
        # Then, while the process remembers the key: its re-check and the run.
        with django_assert_num_queries(2):
            assert client.get(f"/api/v1/runs/{run.pk}/").json()["id"] == run.pk


def test_builder_cancels_a_run_through_the_api(
    builder, version, dataset_version, django_capture_on_commit_callbacks
):
    run = queued_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client(builder).post(f"/api/v1/runs/{run.pk}/cancel/")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "cancelled"
    again = api_client(builder).post(f"/api/v1/runs/{run.pk}/cancel/")
    assert again.status_code == 409 and again.json()["code"] == "conflict"


def test_publisher_may_see_but_not_cancel_a_run(
    publisher, builder, version, dataset_version, django_capture_on_commit_callbacks
):
    run = queued_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
    assert api_client(publisher).get(f"/api/v1/runs/{run.pk}/").status_code == 200
    response = api_client(publisher).post(f"/api/v1/runs/{run.pk}/cancel/")
    assert response.status_code == 403
    assert Run.objects.get(pk=run.pk).status == "queued"
