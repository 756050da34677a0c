"""One test per scoring rule (docs/checks.md)."""

from types import SimpleNamespace

from evaluations.checks.scoring import check_status, effective_check, summarize_case


def r(label, status, score=None, blocking=True):
    return {"label": label, "status": status, "score": score, "blocking": blocking}


def test_threshold_passes_at_score_equal_to_threshold():
    assert check_status(0.7, "scored", 0.7) == "passed"


def test_threshold_fails_below_it():
    assert check_status(0.69, "scored", 0.7) == "failed"


def test_no_threshold_is_scored_not_passed():
    assert check_status(1.0, "scored", None) == "scored"


def test_skipped_and_error_verdicts_keep_their_status_whatever_the_threshold():
    assert check_status(None, "skipped", 0.5) == "skipped"
    assert check_status(None, "error", 0.5) == "error"


def test_a_score_missing_from_a_scored_verdict_is_an_error_not_a_pass():
    assert check_status(None, "scored", 0.5) == "error"


def test_case_passes_when_all_blocking_checks_pass():
    assert summarize_case([[r("a", "passed", 1), r("b", "passed", 0.9)]]).passed


def test_case_fails_when_one_blocking_check_fails():
    assert not summarize_case([[r("a", "passed", 1), r("b", "failed", 0.1)]]).passed


def test_informative_check_never_fails_a_case():
    summary = summarize_case([[r("a", "passed", 1), r("b", "failed", 0.0, blocking=False)]])
    assert summary.passed
    assert summary.checks["b"]["status"] == "failed"  # still shown as failed


def test_a_check_that_does_not_apply_beside_a_scored_pass_leaves_the_case_passed():
    summary = summarize_case([[r("a", "passed", 1), r("b", "skipped")]])
    assert summary.passed and summary.status == "passed"
    assert summary.checks["b"]["statuses"] == {"skipped": 1}


def test_an_error_counts_neither_against_nor_for_a_case():
    """The other half of the scoring rule: a blocking check that could not run leaves the
    repetition without a verdict, never passed."""
    summary = summarize_case([[r("a", "passed", 1), r("b", "skipped"), r("c", "error")]])
    assert not summary.passed
    assert (summary.status, summary.reason) == ("unscored", "check error")
    assert summary.checks["c"]["statuses"] == {"error": 1}
    failed = summarize_case([[r("a", "failed", 0), r("c", "error")]])
    assert (failed.status, failed.reason) == ("failed", "")


def test_unscored_reasons_name_the_agent_the_judge_or_that_nothing_applied():
    agent = summarize_case([[{**r("a", "error"), "agent_error": True}]])
    assert (agent.status, agent.reason) == ("unscored", "agent error")
    judge = summarize_case([[{**r("a", "error"), "model": True}]])
    assert (judge.status, judge.reason) == ("unscored", "judge unavailable")
    no_judge = summarize_case([[{**r("a", "skipped"), "reason": "no judge configured"}]])
    assert (no_judge.status, no_judge.reason) == ("unscored", "judge unavailable")
    skipped = summarize_case([[r("a", "skipped"), r("b", "passed", 1, blocking=False)]])
    assert (skipped.status, skipped.reason) == ("unscored", "every blocking check skipped")


def test_a_case_with_an_unscored_repetition_beside_passed_ones_is_unscored():
    summary = summarize_case([[r("a", "passed", 1)], [r("a", "error")]])
    assert (summary.status, summary.repetitions_passed, summary.repetitions_unscored) == (
        "unscored",
        1,
        1,
    )
    flaky = summarize_case([[r("a", "passed", 1)], [r("a", "failed", 0)], [r("a", "error")]])
    assert flaky.status == "flaky"


def test_scored_check_without_threshold_does_not_decide_the_case():
    assert summarize_case([[r("a", "scored", 0.0)]]).passed


def test_repetition_score_is_the_mean():
    summary = summarize_case(
        [[r("a", "passed", 1.0)], [r("a", "passed", 0.5)], [r("a", "passed", 0.6)]]
    )
    assert summary.checks["a"]["mean"] == 0.7


def test_case_passes_only_if_every_repetition_passes():
    summary = summarize_case([[r("a", "passed", 1.0)], [r("a", "failed", 0.0)]])
    assert not summary.passed
    assert summary.repetitions_passed == 1 and summary.repetitions == 2


def test_case_that_passed_some_repetitions_and_failed_others_is_flaky():
    assert summarize_case([[r("a", "passed", 1)], [r("a", "failed", 0)]]).flaky


def test_case_that_failed_every_repetition_is_not_flaky():
    summary = summarize_case([[r("a", "failed", 0)], [r("a", "failed", 0)]])
    assert not summary.passed and not summary.flaky


def test_override_changes_threshold_params_and_mode_or_disables():
    check = SimpleNamespace(
        label="Shape",
        kind="output_type",
        params={"type": "text", "x": 1},
        threshold=1.0,
        mode="blocking",
    )
    eff = effective_check(
        check, {"Shape": {"threshold": 0.5, "params": {"type": "json"}, "mode": "informative"}}
    )
    assert (eff.threshold, eff.params, eff.mode) == (0.5, {"type": "json", "x": 1}, "informative")
    assert not eff.blocking
    assert effective_check(check, {"Shape": {"disabled": True}}).disabled
    assert effective_check(check, {"Other": {"threshold": 0}}).threshold == 1.0


def test_override_can_remove_a_threshold():
    check = SimpleNamespace(label="S", kind="latency", params={}, threshold=1.0, mode="blocking")
    assert effective_check(check, {"S": {"threshold": None}}).threshold is None
