"""The trials API: a run's trials listed (light rows, a cursor, filters) and one read with its
transcript and check results, only for runs the user may see, each in a number of queries that
does not grow with the trials or their check results."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from guardian.shortcuts import assign_perm

from evaluations.models import Trial
from tests.support import factories
from tests.support.governance import api_client, used_client
from tests.support.schedules import SHAPE

TEXT = {"label": "Text", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}


def cases(count):
    return [(f"c{i:02}", f"hi {i}", {}) for i in range(count)]


@pytest.fixture
def version(db):
    return factories.agent_version()


def run_of(builder, version, capture, count, checks=(SHAPE,), reps=1):
    dataset_version = factories.dataset_version(
        dataset_obj=factories.dataset(f"set-{count}-{len(checks)}"),
        cases=cases(count),
        checks=checks,
    )
    return factories.start_run(builder, version, dataset_version, capture, reps=reps)


def queries(client, url):
    client.get(url)  # the first request of a process fills the content-type cache
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_builder_lists_a_runs_trials_and_reads_one_with_its_check_results(
    builder, version, django_capture_on_commit_callbacks
):
    run = run_of(builder, version, django_capture_on_commit_callbacks, 2, reps=2)
    client = api_client(builder)
    listed = client.get("/api/v1/trials/", {"run": run.pk}).json()
    assert [(t["case"], t["repetition"]) for t in listed["results"]] == [
        ("c00", 1),
        ("c00", 2),
        ("c01", 1),
        ("c01", 2),
    ]
    assert {t["status"] for t in listed["results"]} == {"completed"}
    assert "transcript" not in listed["results"][0] and listed["next"] is None
    trial = client.get(f"/api/v1/trials/{listed['results'][0]['id']}/").json()
    assert trial["run"] == run.pk and trial["transcript"]["output"]
    [result] = trial["check_results"]
    assert (result["label"], result["kind"], result["status"]) == ("Shape", "output_type", "passed")


def test_the_list_filters_by_status_and_case(builder, version, django_capture_on_commit_callbacks):
    run = run_of(builder, version, django_capture_on_commit_callbacks, 3)
    Trial.objects.filter(run=run, case__key="c01").update(status="error")
    client = api_client(builder)
    errors = client.get("/api/v1/trials/", {"run": run.pk, "status": "error"}).json()["results"]
    assert [t["case"] for t in errors] == ["c01"]
    by_case = client.get("/api/v1/trials/", {"case": "c02"}).json()["results"]
    assert [t["case"] for t in by_case] == ["c02"]
    assert client.get("/api/v1/trials/", {"status": "lost"}).status_code == 400


def test_the_list_pages_by_cursor_without_gaps_or_repeats(
    builder, version, django_capture_on_commit_callbacks
):
    run = run_of(builder, version, django_capture_on_commit_callbacks, 30, checks=(), reps=2)
    client = api_client(builder)
    page = client.get("/api/v1/trials/", {"run": run.pk}).json()
    assert "count" not in page and len(page["results"]) == 50
    seen = [t["id"] for t in page["results"]]
    page = client.get(page["next"]).json()
    seen += [t["id"] for t in page["results"]]
    assert page["next"] is None
    assert seen == list(Trial.objects.filter(run=run).order_by("id").values_list("id", flat=True))


def test_trials_of_an_agent_one_may_not_see_do_not_exist(
    builder, outsider, version, django_capture_on_commit_callbacks
):
    run = run_of(builder, version, django_capture_on_commit_callbacks, 1)
    trial = Trial.objects.get(run=run)
    client = api_client(outsider)
    assert client.get("/api/v1/trials/").json()["results"] == []
    assert client.get(f"/api/v1/trials/{trial.pk}/").status_code == 404
    assign_perm("agents.view_agent", outsider, version.agent)
    client = api_client(outsider)
    assert [t["id"] for t in client.get("/api/v1/trials/").json()["results"]] == [trial.pk]
    assert client.get(f"/api/v1/trials/{trial.pk}/").status_code == 200


def test_the_list_and_the_detail_cost_the_same_queries_for_few_trials_or_many(
    builder, version, django_capture_on_commit_callbacks, django_assert_num_queries
):
    capture = django_capture_on_commit_callbacks
    small = run_of(builder, version, capture, 1)
    large = run_of(builder, version, capture, 12, checks=(SHAPE, TEXT), reps=2)
    one, many = (Trial.objects.filter(run=r).first() for r in (small, large))
    assert many.check_results.count() == 2 and one.check_results.count() == 1
    list_queries = queries(api_client(builder), f"/api/v1/trials/?run={small.pk}")
    detail_queries = queries(api_client(builder), f"/api/v1/trials/{one.pk}/")
    # A key this process verified a moment ago: its re-check (revoked, expired, user active),
    # the page; the detail adds its check results (one prefetch).
    assert (list_queries, detail_queries) == (2, 3)
    for url, expected in [
        (f"/api/v1/trials/?run={large.pk}", list_queries),
        ("/api/v1/trials/", list_queries),  # every run's trials, 25 in all
        (f"/api/v1/trials/{many.pk}/", detail_queries),
    ]:
        client = used_client(builder)
        # A key's first read loads it with its user, and the user's and groups' permissions
        # (guardian), instead of the re-check: two more.
        with django_assert_num_queries(expected + 2):
            assert client.get(url).status_code == 200
        with django_assert_num_queries(expected):
            assert client.get(url).status_code == 200
