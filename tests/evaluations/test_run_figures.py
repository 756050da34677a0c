"""A finished run's case results and figures, computed in the database once:
the same numbers as the rules computed row by row, in a number of queries that does not grow
with the trials."""

import gc

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluations.checks import MODEL_KINDS, scoring
from evaluations.choices import CheckStatus, RunStatus, TrialStatus
from evaluations.contract.runs import run_totals
from evaluations.engine import completion, compute_case_results, maybe_finish_run
from evaluations.models import CaseResult, Check, CheckResult, Run
from evaluations.reads import figures
from evaluations.reads.calibration import informative_checks
from evaluations.reads.results_grid import unscored_checks
from evaluations.reads.trends import check_stats
from tests.support import factories
from tests.support.contract_runs import GRADER, add_trial, empty_run

pytestmark = pytest.mark.django_db

CHECKS = [
    GRADER,
    {"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0},
    {"label": "Tone", "kind": "custom", "params": {"criterion": "polite"}, "threshold": 0.5},
]


def staged_run(cases):
    """A run of `cases` cases x 3 repetitions, every trial finished: failures in some
    repetitions (flaky), a case failing always, skipped and errored blocking checks, an
    informative grader, a cancelled trial without results and one with results."""
    keys = [f"c{i}" for i in range(cases)]
    version = factories.agent_version(factories.agent(f"bot-{cases}"))
    run = empty_run(
        checks=CHECKS, cases=keys, status=RunStatus.RUNNING, summary={}, agent_version=version
    )
    checks = {check.label: check for check in run.dataset_version.checks.all()}
    for i, key in enumerate(keys):
        for rep in range(3):
            trial = add_trial(run, case_key=key, quality=round(0.3 + 0.1 * ((i + rep) % 7), 3))
            tools = CheckStatus.FAILED if (i == 0 or (i % 3 == 1 and rep == 1)) else "passed"
            tone = (CheckStatus.SKIPPED, CheckStatus.ERROR, CheckStatus.PASSED)[(i + rep) % 3]
            CheckResult.objects.create(
                trial=trial,
                check_config=checks["Tools"],
                status=tools,
                score=0.0 if tools == CheckStatus.FAILED else 1.0,
            )
            CheckResult.objects.create(
                trial=trial,
                check_config=checks["Tone"],
                status=tone,
                score=0.75 if tone == CheckStatus.PASSED else None,
                reason=f"no judge ({tone})" if tone != CheckStatus.PASSED else "",
            )
    # A trial cancelled after its checks were written, and one cancelled before it ran.
    run.trials.filter(case__key="c0", repetition=3).update(status=TrialStatus.CANCELLED)
    cancelled = run.trials.get(case__key="c1", repetition=3)
    cancelled.check_results.all().delete()
    run.trials.filter(pk=cancelled.pk).update(status=TrialStatus.CANCELLED)
    return run


def row_by_row(run):
    """The case summaries as `scoring.summarize_case` computes them from every result."""
    by_case = {}
    for result in CheckResult.objects.filter(trial__run=run).select_related(
        "trial__case", "check_config"
    ):
        reps = by_case.setdefault(result.trial.case.key, {})
        reps.setdefault(result.trial.repetition, []).append(
            {
                "label": result.check_config.label,
                "score": result.score,
                "status": result.status,
                "blocking": result.blocking,
                "model": result.check_config.kind in MODEL_KINDS,
                "reason": result.reason,
                "agent_error": result.trial.status == TrialStatus.ERROR,
            }
        )
    for trial in run.trials.exclude(status=TrialStatus.CANCELLED).select_related("case"):
        by_case.setdefault(trial.case.key, {}).setdefault(trial.repetition, [])
    return {
        key: scoring.summarize_case([reps[n] for n in sorted(reps)])
        for key, reps in by_case.items()
    }


def assert_as_the_rules(run, expected):
    stored = {r.case.key: r for r in CaseResult.objects.filter(run=run).select_related("case")}
    assert set(stored) == set(expected)
    for key, want in expected.items():
        got = stored[key]
        assert (got.passed, got.flaky) == (want.passed, want.flaky), key
        assert (got.status, got.reason, got.repetitions_unscored) == (
            want.status,
            want.reason,
            want.repetitions_unscored,
        ), key
        assert (got.repetitions, got.repetitions_passed) == (
            want.repetitions,
            want.repetitions_passed,
        ), key
        assert got.checks == want.checks, key


def test_case_results_are_those_of_the_scoring_rules():
    run = staged_run(6)
    expected = row_by_row(run)
    summary = compute_case_results(run)

    assert_as_the_rules(run, expected)
    assert summary["cases"] == 6 and summary["trials_cancelled"] == 2
    assert summary["passed"] == sum(want.passed for want in expected.values())
    assert summary["flaky"] == sum(want.flaky for want in expected.values()) > 0


def test_stored_figures_read_as_the_live_aggregates():
    run = staged_run(5)
    compute_case_results(run)
    run.refresh_from_db()
    assert run.figures["version"] == 1
    units = {c["label"]: c["units"] for c in run.figures["checks"]}
    assert units["Quality"] > 0 and units["Tools"] == units["Tone"] == 0  # the grader's only
    live = Run.objects.get(pk=run.pk)
    live.figures = {}

    assert run_totals(run) == run_totals(live)
    assert unscored_checks(run) == unscored_checks(live)
    assert unscored_checks(run)["total"] > 0
    assert informative_checks([run]) == informative_checks([live])
    stored, computed = check_stats([run])[run.pk], check_stats([live])[run.pk]
    assert list(stored) == list(computed) == ["Quality", "Tools", "Tone"]
    for label, stats in computed.items():
        mean = stats.pop("mean")
        assert stored[label].pop("mean") == pytest_approx(mean), label
        assert stored[label] == stats, label


def test_case_results_go_in_a_chunk_at_a_time_while_the_rows_stream(monkeypatch):
    """The finishing worker's memory does not grow with the cases: the check groups and the
    repetitions stream in case order, and each chunk of case results is written before the
    groups of the later cases are read."""
    run = staged_run(7)
    CheckResult.objects.filter(trial__run=run, trial__case__key="c3").delete()  # no groups
    expected = row_by_row(run)
    assert expected["c3"].checks == {} and expected["c3"].repetitions == 3
    monkeypatch.setattr(completion, "CHUNK", 2)
    monkeypatch.setattr(figures, "CHUNK", 3)
    tallied, inserted = [], []
    add, insert_all = figures.Tally.add, completion.insert_all

    def counting_add(tally, row):
        tallied.append(row)
        add(tally, row)

    def spying_insert_all(model, rows):
        inserted.append((len(rows), len(tallied)))
        insert_all(model, rows)

    monkeypatch.setattr(figures.Tally, "add", counting_add)
    monkeypatch.setattr(completion, "insert_all", spying_insert_all)
    summary = compute_case_results(run)

    assert [n for n, _ in inserted] == [2, 2, 2, 1]
    seen = [n for _, n in inserted]
    assert seen == sorted(seen) and seen[0] < seen[-1] == len(tallied)
    assert_as_the_rules(run, expected)
    assert summary["cases"] == 7
    live = Run.objects.get(pk=run.pk)
    live.figures = {}
    assert unscored_checks(run) == unscored_checks(live)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_cycle_collector_pauses_while_finishing_and_comes_back_as_it_was(monkeypatch, enabled):
    run = staged_run(2)
    during, insert_all = [], completion.insert_all

    def spying_insert_all(model, rows):
        during.append(gc.isenabled())
        insert_all(model, rows)

    monkeypatch.setattr(completion, "insert_all", spying_insert_all)
    (gc.enable if enabled else gc.disable)()
    try:
        compute_case_results(run)
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
    assert during == [False]


def test_a_result_of_a_check_from_another_version_is_counted():
    """Check results name the run's dataset version's checks; one that names another check
    (read when met) still counts, as it always did."""
    run = staged_run(2)
    other = factories.dataset_version(
        checks=[{"label": "Extra", "kind": "tools_used", "params": {}, "threshold": 1.0}]
    )
    extra = Check.objects.get(dataset_version=other)
    CheckResult.objects.create(
        trial=run.trials.get(case__key="c1", repetition=1),
        check_config=extra,
        status=CheckStatus.PASSED,
        score=1.0,
    )
    expected = row_by_row(run)
    compute_case_results(run)

    assert_as_the_rules(run, expected)
    assert "Extra" in CaseResult.objects.get(run=run, case__key="c1").checks
    run.refresh_from_db()
    assert "Extra" in [c["label"] for c in run.figures["checks"]]


def pytest_approx(value):
    return None if value is None else pytest.approx(value, abs=1e-12)


def finishing_queries(cases):
    run = staged_run(cases)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    with CaptureQueriesContext(connection) as ctx:
        assert maybe_finish_run(run.pk)
    return len(ctx)


def test_finishing_a_run_takes_as_many_queries_for_ten_times_the_trials():
    assert finishing_queries(2) == finishing_queries(20)
