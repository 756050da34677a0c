"""One evaluation end to end through django-q2's sync mode: start_run plans every trial, the
shard executes them, checks are scored and case results follow the scoring rules
(docs/checks.md)."""

import pytest

from evaluations.actions.start_run import StartRun
from evaluations.models import CaseResult, CheckResult, Run, Trial
from governance.models import AuditEntry
from tests.support import factories

SCHEMA = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}

CHECKS = [
    {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0},
    {"label": "Latency", "kind": "latency", "params": {"max_ms": 1000}, "threshold": 1.0},
    {"label": "Tools", "kind": "tools_used", "params": {"match": "any_order"}, "threshold": 1.0},
    {
        "label": "No email",
        "kind": "tools_used",
        "params": {"tools": [{"name": "email.send"}], "forbidden": True},
        "threshold": 1.0,
    },
    {
        "label": "Latency (info)",
        "kind": "latency",
        "params": {"max_ms": 1},
        "threshold": 1.0,
        "mode": "informative",
    },
]


def scripted_case(key, expected_tools=(), overrides=None, **spec):
    return (
        key,
        spec,
        {"expected_tools": [{"name": n} for n in expected_tools], "overrides": overrides or {}},
    )


@pytest.fixture
def version(builder):
    return factories.agent_version(callable_path="tests.support.agents_under_test.scripted")


@pytest.fixture
def dataset_version():
    return factories.dataset_version(
        cases=[
            scripted_case("good", ["kb.search"], output="hello", tools=["kb.search"]),
            scripted_case("missing-tool", ["kb.search"], output="hello"),
            scripted_case("sends-email", [], output="hi", tools=["email.send"]),
            scripted_case(
                "json",
                [],
                overrides={"Shape": {"params": {"type": "json_schema", "schema": SCHEMA}}},
                json={"answer": "yes"},
            ),
            scripted_case(
                "bad-json",
                [],
                overrides={"Shape": {"params": {"type": "json_schema", "schema": SCHEMA}}},
                json={"wrong": 1},
            ),
            scripted_case("crashes", [], **{"raise": "agent exploded"}),
            scripted_case(
                "slow",
                [],
                overrides={"Latency": {"threshold": None}},
                output="zzz",
                latency_ms=5000,
            ),
            scripted_case(
                "no-tools-check", ["x"], overrides={"Tools": {"disabled": True}}, output="fine"
            ),
        ],
        checks=CHECKS,
    )


def results(run):
    return {cr.case.key: cr for cr in CaseResult.objects.filter(run=run).select_related("case")}


def statuses(run, key):
    return dict(
        CheckResult.objects.filter(trial__run=run, trial__case__key=key).values_list(
            "check_config__label", "status"
        )
    )


def test_start_run_plans_every_trial_and_runs_it(
    builder, version, dataset_version, django_capture_on_commit_callbacks
):
    run = factories.start_run(
        builder, version, dataset_version, django_capture_on_commit_callbacks, reps=2
    )
    assert run.status == "completed"
    assert run.trials_total == 16 and run.trials_done == 16
    assert Trial.objects.filter(run=run).count() == 16
    assert CheckResult.objects.filter(trial__run=run).count() == 16 * len(CHECKS)
    assert run.summary["cases"] == 8
    assert AuditEntry.objects.filter(action="evaluations.run.start", target_id=str(run.pk)).exists()


def test_case_results_follow_the_scoring_rules(
    builder, version, dataset_version, django_capture_on_commit_callbacks
):
    run = factories.start_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
    by_key = results(run)
    assert by_key["good"].passed
    assert not by_key["missing-tool"].passed
    assert statuses(run, "missing-tool")["Tools"] == "failed"
    assert not by_key["sends-email"].passed
    assert statuses(run, "sends-email")["No email"] == "failed"
    assert by_key["json"].passed
    assert not by_key["bad-json"].passed
    # The informative latency check failed everywhere yet failed no case.
    assert statuses(run, "good")["Latency (info)"] == "failed"
    # No threshold: scored, not passed; and it does not decide the case.
    assert statuses(run, "slow")["Latency"] == "scored"
    assert by_key["slow"].passed
    # Disabled by an override: skipped with a reason, and not counted against the case.
    disabled = CheckResult.objects.get(
        trial__run=run, trial__case__key="no-tools-check", check_config__label="Tools"
    )
    assert disabled.status == "skipped" and "override" in disabled.reason
    assert by_key["no-tools-check"].passed


def test_an_agent_failure_is_an_error_not_a_failed_case(
    builder, version, dataset_version, django_capture_on_commit_callbacks
):
    run = factories.start_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
    trial = Trial.objects.get(run=run, case__key="crashes")
    assert trial.status == "error" and "agent exploded" in trial.error
    assert set(statuses(run, "crashes").values()) == {"error"}
    assert run.trials_error == 1
    # Checks in error count neither against the case nor for it: it has no verdict, and
    # says why; the run's summary shows the error and the unscored case.
    crashes = results(run)["crashes"]
    assert not crashes.passed and (crashes.status, crashes.reason) == ("unscored", "agent error")
    assert run.summary["trials_error"] == 1 and run.summary["unscored"] == 1


def test_repetitions_mean_scores_and_flag_flaky_cases(builder, django_capture_on_commit_callbacks):
    version = factories.agent_version(callable_path="tests.support.agents_under_test.flaky")
    dataset_version = factories.dataset_version(
        cases=[("alternating", "q", {"expected_tools": [{"name": "kb.search"}]})],
        checks=[{"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}],
    )
    run = factories.start_run(
        builder, version, dataset_version, django_capture_on_commit_callbacks, reps=4
    )
    result = results(run)["alternating"]
    assert not result.passed
    assert result.flaky
    assert result.repetitions_passed == 2 and result.repetitions == 4
    assert result.checks["Tools"]["mean"] == 0.5
    assert run.summary["flaky"] == 1


def test_finishing_a_run_happens_once(
    builder, version, dataset_version, django_capture_on_commit_callbacks
):
    from evaluations.engine import maybe_finish_run
    from evaluations.signals import run_finished

    received = []

    def listener(sender, run_id, status, **kw):
        received.append((run_id, status))

    run_finished.connect(listener)
    try:
        run = factories.start_run(
            builder, version, dataset_version, django_capture_on_commit_callbacks
        )
        with django_capture_on_commit_callbacks(execute=True):
            assert maybe_finish_run(run.pk) is False
    finally:
        run_finished.disconnect(listener)
    assert received == [(run.pk, "completed")]
    assert CaseResult.objects.filter(run=run).count() == 8


def test_a_finished_trial_is_never_executed_again(
    builder, version, dataset_version, django_capture_on_commit_callbacks
):
    from evaluations.engine import run_shard

    run = factories.start_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
    ids = list(run.trials.values_list("pk", flat=True))
    Run.objects.filter(pk=run.pk).update(status="running")  # as if a task were re-delivered
    assert run_shard(run.pk, ids) == 0
    assert CheckResult.objects.filter(trial__run=run).count() == 8 * len(CHECKS)


def test_outsider_cannot_start_a_run(outsider, version, dataset_version):
    from sherlock.core.errors import ActionDenied

    with pytest.raises(ActionDenied):
        StartRun(
            acting_user=outsider, agent_version=version, dataset_version=dataset_version
        ).execute()
    assert not Run.objects.exists()


def test_admin_can_browse_the_run_its_cases_and_trials(
    admin_user,
    password,
    builder,
    version,
    dataset_version,
    client,
    django_capture_on_commit_callbacks,
):
    run = factories.start_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
    trial = Trial.objects.get(run=run, case__key="good")
    client.login(username=admin_user.username, password=password)
    for url in [
        "/admin/evaluations/run/",
        f"/admin/evaluations/run/{run.pk}/change/",
        f"/admin/evaluations/trial/{trial.pk}/change/",
        "/admin/evaluations/checkresult/",
        "/admin/evaluations/caseresult/",
    ]:
        response = client.get(url)
        assert response.status_code == 200, url
    page = client.get(f"/admin/evaluations/trial/{trial.pk}/change/").content.decode()
    assert "Shape" in page and "passed" in page


def test_a_shard_helps_with_the_runs_other_pending_trials(
    builder, version, dataset_version, django_capture_on_commit_callbacks
):
    """A shard whose own trials are done takes the run's other pending trials, so no thread
    waits idle for the end of its shard; the shards behind it then find nothing to do."""
    from evaluations.engine import run_shard

    with django_capture_on_commit_callbacks(execute=False):  # no shard enqueued
        run = StartRun(
            acting_user=builder, agent_version=version, dataset_version=dataset_version
        ).execute()
    first, *others = run.trials.order_by("pk").values_list("pk", flat=True)
    with django_capture_on_commit_callbacks(execute=True):
        assert run_shard(run.pk, [first]) == 8
        assert run_shard(run.pk, others) == 0
    run.refresh_from_db()
    assert run.status == "completed"
    assert set(run.trials.values_list("attempts", flat=True)) == {1}
