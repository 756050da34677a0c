"""`GET /api/v1/runs/compare/?a=&b=`: the five measures side by side, per-case changes, and a
comparability check that names every difference; 404 for runs the user may not see."""

import json

import pytest
from guardian.shortcuts import assign_perm
from rest_framework.test import APIClient

from evaluations.actions.import_trials import ImportTrials
from evaluations.models import CaseResult
from tests.support import factories
from tests.support.contract_runs import empty_run, import_seed_variant, seed_records
from tests.support.factories import api

pytestmark = pytest.mark.django_db

URL = "/api/v1/runs/compare/"


@pytest.fixture
def seed_runs():
    """The worked example's two variants as runs of two versions of one agent, on one dataset
    version."""
    agent = factories.agent("refund-agent")
    stable = import_seed_variant("stable v1", factories.agent_version(agent))
    fast = import_seed_variant("fast v2", factories.agent_version(agent))
    return stable, fast


def compare(user, a, b):
    return api(user).get(URL, {"a": a.pk, "b": b.pk})


def test_builder_sees_the_two_contracts_side_by_side(builder, seed_runs):
    stable, fast = seed_runs

    response = compare(builder, stable, fast)

    assert response.status_code == 200, response.json()
    body = response.json()
    assert [row["gate"] for row in body["table"]] == ["pass", "fail (false success)"]
    assert [row["cost/verified outcome"] for row in body["table"]] == ["$0.52", "$0.63"]
    assert [row["quality"] for row in body["table"]] == ["0.818 (4/4)", "0.902 (5/5)"]
    assert body["a"]["run"]["id"] == stable.pk
    assert body["b"]["measures"]["first_failing_gate"] == "false_success"
    assert body["b"]["measures"]["false_success"] == {"num": 1, "den": 5, "wilson95": None}
    assert "| refund-agent v2 run #" in body["markdown"]
    assert body["comparable"] is True
    assert body["differences"] == []


def test_per_case_changes_come_from_the_case_results(builder, seed_runs):
    stable, fast = seed_runs
    keys = sorted(stable.case_results.values_list("case__key", flat=True))
    assert len(keys) >= 5
    for run in (stable, fast):
        run.case_results.update(status="passed", passed=True)
    fast.case_results.filter(case__key=keys[0]).update(status="failed", passed=False)
    stable.case_results.filter(case__key=keys[1]).update(status="failed", passed=False)
    fast.case_results.filter(case__key=keys[2]).update(status="flaky", passed=False)
    stable.case_results.filter(case__key=keys[3]).update(status="flaky", passed=False)
    fast.case_results.filter(case__key=keys[4]).update(status="unscored", passed=False)

    cases = compare(builder, stable, fast).json()["cases"]

    assert cases == {
        "regressed": [keys[0], keys[2]],  # passed -> failed, passed -> flaky
        "improved": [keys[1], keys[3]],
        "newly_unscored": [keys[4]],  # passed -> unscored is a change too
        "newly_scored": [],
        "newly_flaky": [keys[2]],
        "no_longer_flaky": [keys[3]],
        "only_in_a": [],
        "only_in_b": [],
    }


def test_a_changed_grader_or_dataset_version_is_named(builder, seed_runs):
    stable, fast = seed_runs
    fast.comparability = {
        **fast.comparability,
        "dataset_version": fast.comparability["dataset_version"] + 1000,
        "checks": {"Task quality (imported)": "0000", "Tone": "1111"},
        "judge_models": ["gpt-4o-mini"],
    }
    fast.save()

    body = compare(builder, stable, fast).json()

    assert body["comparable"] is False
    differences = body["differences"]
    assert differences[0].startswith("dataset version differs:")
    assert "check 'Task quality (imported)' version differs" in differences[1]
    assert differences[2] == f"check 'Tone' only in run #{fast.pk}"
    assert differences[3] == "judge models differ: none vs gpt-4o-mini"


def test_runs_on_different_datasets_list_their_own_cases(builder, seed_runs):
    stable, _ = seed_runs
    other = empty_run(
        cases=("c1",), agent_version=factories.agent_version(stable.agent_version.agent)
    )
    CaseResult.objects.create(
        run=other, case=other.dataset_version.dataset.cases.get(), passed=True
    )

    body = compare(builder, stable, other).json()

    assert body["comparable"] is False
    assert body["differences"][0].startswith("dataset version differs:")
    assert "quality grader differs: Task quality (imported)@" in body["differences"][-1]
    assert body["differences"][-1].endswith(" vs none")
    assert body["cases"]["only_in_b"] == ["c1"]
    assert len(body["cases"]["only_in_a"]) == 5


def test_a_user_scoped_to_one_agent_gets_404_for_the_other_agents_run(seed_runs, outsider):
    stable, _ = seed_runs
    hidden = import_seed_variant("fast v2", factories.agent_version(factories.agent("secret")))
    assign_perm("agents.view_agent", outsider, stable.agent_version.agent)

    assert compare(outsider, stable, stable).status_code == 200
    response = compare(outsider, stable, hidden)
    assert response.status_code == 404


def test_an_outsider_gets_404_exactly_as_for_a_missing_run(outsider, builder, seed_runs):
    stable, fast = seed_runs

    assert compare(outsider, stable, fast).status_code == 404
    assert api(builder).get(URL, {"a": stable.pk, "b": 999999}).status_code == 404


@pytest.mark.parametrize(
    "params, field",
    [({"b": 1}, "a"), ({"a": 1}, "b"), ({"a": "x", "b": 1}, "a"), ({"a": 1, "b": "-2"}, "b")],
)
def test_a_missing_or_invalid_parameter_is_a_400_naming_it(builder, params, field):
    response = api(builder).get(URL, params)

    assert response.status_code == 400
    assert response.json()["field"] == field
    assert f"'{field}'" in response.json()["detail"]


def test_anonymous_users_are_refused(seed_runs):
    stable, fast = seed_runs

    assert APIClient().get(URL, {"a": stable.pk, "b": fast.pk}).status_code in (401, 403)


def test_the_comparison_costs_the_same_queries_however_many_trials(
    builder, seed_runs, django_assert_max_num_queries
):
    stable, fast = seed_runs
    compare(builder, stable, fast)  # warm the permission caches
    with django_assert_max_num_queries(50) as small:
        compare(builder, stable, fast)
    records = [
        {**record, "trial_id": f"{record['trial_id']}-{copy}"}
        for copy in range(6)
        for record in seed_records("stable v1")
    ]
    bigger = ImportTrials(
        acting_user=None,
        agent_version=factories.agent_version(stable.agent_version.agent),
        text="\n".join(json.dumps(record) for record in records),
    ).execute()
    assert bigger.trials.count() == 30

    with django_assert_max_num_queries(len(small.captured_queries)):
        compare(builder, stable, bigger)
