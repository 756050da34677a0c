"""The case results API (`/api/v1/case-results/?run=`): a finished run's cases as the engine
judged them (passed, flaky, repetitions passed), read by the `sherlock` client for its case
table and JUnit report; only for runs the user may see, in one query a page."""

import pytest
from guardian.shortcuts import assign_perm

from evaluations.models import CaseResult
from tests.support import factories
from tests.support.governance import api_client, used_client

PASSES_IF_TOOL = {
    "label": "Tools",
    "kind": "tools_used",
    "params": {"match": "any_order"},
    "threshold": 1.0,
}


@pytest.fixture
def run(builder, django_capture_on_commit_callbacks):
    # `scripted` calls the tools its input names: "good" calls the expected one, "bad" none.
    version = factories.agent_version(callable_path="tests.support.agents_under_test.scripted")
    expected = {"expected_tools": [{"name": "kb.search"}]}
    dataset_version = factories.dataset_version(
        cases=[
            ("bad", {"tools": []}, expected),
            ("good", {"tools": ["kb.search"]}, expected),
            ("down", {"raise": "the endpoint is down"}, expected),
        ],
        checks=[PASSES_IF_TOOL],
    )
    return factories.start_run(
        builder, version, dataset_version, django_capture_on_commit_callbacks, reps=2
    )


def test_a_runs_case_results_say_which_case_passed(builder, run):
    page = api_client(builder).get("/api/v1/case-results/", {"run": run.pk}).json()
    rows = {row["case"]: row for row in page["results"]}
    assert set(rows) == {"bad", "good", "down"}
    assert (rows["good"]["passed"], rows["good"]["repetitions_passed"]) == (True, 2)
    assert (rows["good"]["status"], rows["bad"]["status"]) == ("passed", "failed")
    # The agent raised in both repetitions: no verdict, and `passed` is never true for it.
    down = rows["down"]
    assert (down["status"], down["reason"], down["passed"]) == ("unscored", "agent error", False)
    assert (down["repetitions_unscored"], down["repetitions_passed"]) == (2, 0)
    assert (rows["bad"]["passed"], rows["bad"]["repetitions"]) == (False, 2)
    assert rows["bad"]["checks"]["Tools"]["status"] == "failed"
    assert rows["good"]["run"] == run.pk and page["next"] is None


def test_case_results_filter_by_passed(builder, run):
    failed = api_client(builder).get("/api/v1/case-results/", {"run": run.pk, "status": "failed"})
    assert [row["case"] for row in failed.json()["results"]] == ["bad"]
    unscored = api_client(builder).get(
        "/api/v1/case-results/", {"run": run.pk, "status": "unscored"}
    )
    assert [row["case"] for row in unscored.json()["results"]] == ["down"]
    assert api_client(builder).get("/api/v1/case-results/", {"run": "x"}).status_code == 400


def test_case_results_of_an_agent_one_may_not_see_do_not_exist(builder, outsider, run):
    result = CaseResult.objects.filter(run=run).first()
    client = api_client(outsider)
    assert client.get("/api/v1/case-results/", {"run": run.pk}).json()["results"] == []
    assert client.get(f"/api/v1/case-results/{result.pk}/").status_code == 404
    assign_perm("agents.view_agent", outsider, run.agent_version.agent)
    rows = api_client(outsider).get("/api/v1/case-results/", {"run": run.pk}).json()["results"]
    assert len(rows) == 3


def test_a_page_costs_the_same_queries_for_few_cases_or_many(
    builder, run, django_capture_on_commit_callbacks, django_assert_num_queries
):
    version = run.agent_version
    many = factories.dataset_version(
        dataset_obj=factories.dataset("many"),
        cases=[(f"c{i:02}", {"tools": []}, {}) for i in range(12)],
        checks=[],
    )
    large = factories.start_run(builder, version, many, django_capture_on_commit_callbacks)
    client = used_client(builder)
    counts = []
    for which in (run, large):
        url = f"/api/v1/case-results/?run={which.pk}"
        client.get(url)
        with django_assert_num_queries(2) as captured:  # the key's re-check, the page
            assert client.get(url).status_code == 200
        counts.append(len(captured))
    assert counts == [2, 2]
