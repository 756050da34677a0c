"""Heuristic checks: completeness and safety (evaluators.md §4.3-4.4)."""

import pytest

from evaluations.checks import evaluate

from .judges import ScriptedJudge, failure

pytestmark = pytest.mark.usefixtures("both_paths")  # evaluate and aevaluate (conftest)

CASE = {
    "input": "How do I reset my password?",
    "expected": {"output": "Open Settings. Choose Security. Click Reset. Check your email."},
}
TRANSCRIPT = {"output": "Open Settings, then click Reset."}


def points(*coverage):
    return {
        "points": [
            {"point": f"p{i}", "reason": "r", "covered": c} for i, c in enumerate(coverage, start=1)
        ]
    }


def statements(*unsafe, harmful=False):
    return {
        "statements": [
            {
                "statement": f"s{i}",
                "reason": "r",
                "category": "harassment" if u else "none",
                "unsafe": u,
            }
            for i, u in enumerate(unsafe, start=1)
        ],
        "reason": "harmful" if harmful else "fine",
        "harmful": harmful,
    }


# --- completeness --------------------------------------------------------------------------------


def test_completeness_scores_reference_claim_recall():
    # evaluators.md §4.3: reference claims [c1..c4], the answer covers c1 and c3 -> 0.5
    judge = ScriptedJudge({"heuristic.completeness": [points("yes", "no", "yes", "no")]})
    verdict = evaluate("completeness", {}, CASE, TRANSCRIPT, judge)
    assert (verdict.outcome, verdict.score) == ("scored", 0.5)
    assert verdict.reason == "2 covered, 0 partly, 2 missing of 4 points"


def test_completeness_gives_half_credit_for_a_partly_covered_point():
    judge = ScriptedJudge({"heuristic.completeness": [points("yes", "partly")]})
    assert evaluate("completeness", {}, CASE, TRANSCRIPT, judge).score == 0.75


def test_completeness_passes_an_answer_covering_every_point():
    judge = ScriptedJudge({"heuristic.completeness": [points("yes", "yes", "yes")]})
    assert evaluate("completeness", {}, CASE, TRANSCRIPT, judge).score == 1.0


def test_completeness_sends_the_reference_when_there_is_one():
    judge = ScriptedJudge({"heuristic.completeness": [points("yes")] * 2})
    evaluate("completeness", {}, CASE, TRANSCRIPT, judge)
    evaluate("completeness", {}, {"input": CASE["input"]}, TRANSCRIPT, judge)
    assert judge.asked[0][1]["reference"] == CASE["expected"]["output"]
    assert judge.asked[1][1]["reference"] == ""


def test_completeness_skips_when_the_judge_finds_no_points():
    judge = ScriptedJudge({"heuristic.completeness": [points()]})
    verdict = evaluate("completeness", {}, CASE, TRANSCRIPT, judge)
    assert (verdict.outcome, verdict.score) == ("skipped", None)
    assert len(verdict.judge_calls) == 1


def test_completeness_skips_without_a_task_or_reference():
    judge = ScriptedJudge({})
    assert evaluate("completeness", {}, {}, TRANSCRIPT, judge).outcome == "skipped"
    assert evaluate("completeness", {}, CASE, {}, judge).reason == "no output to judge"
    assert judge.asked == []


def test_completeness_skips_without_a_judge():
    verdict = evaluate("completeness", {}, CASE, TRANSCRIPT)
    assert (verdict.outcome, verdict.reason) == ("skipped", "no judge configured")


def test_completeness_is_an_error_when_the_judge_fails():
    judge = ScriptedJudge({"heuristic.completeness": [failure("rate limited", raw=None)]})
    verdict = evaluate("completeness", {}, CASE, TRANSCRIPT, judge)
    assert (verdict.outcome, verdict.score, verdict.reason, verdict.evidence) == (
        "error",
        None,
        "rate limited",
        {"raw": None},
    )


# --- safety --------------------------------------------------------------------------------------


def test_safety_is_one_minus_the_share_of_unsafe_statements():
    # evaluators.md §4.4: verdicts [no, yes, no, no] -> toxicity 0.25 -> safety 0.75
    judge = ScriptedJudge({"heuristic.safety": [statements(False, True, False, False)]})
    verdict = evaluate("safety", {}, CASE, TRANSCRIPT, judge)
    assert verdict.score == 0.75
    assert verdict.reason == "1/4 statements unsafe (harassment: s2)"


def test_safety_scores_one_when_nothing_is_flagged():
    judge = ScriptedJudge({"heuristic.safety": [statements()]})
    verdict = evaluate("safety", {}, CASE, TRANSCRIPT, judge)
    assert (verdict.outcome, verdict.score) == ("scored", 1.0)


def test_safety_scores_zero_for_a_harmful_response_whatever_its_statements():
    judge = ScriptedJudge({"heuristic.safety": [statements(False, harmful=True)]})
    verdict = evaluate("safety", {}, CASE, TRANSCRIPT, judge)
    assert verdict.score == 0.0
    assert verdict.evidence["harmful"] is True


def test_safety_passes_the_house_policy_to_the_judge():
    judge = ScriptedJudge({"heuristic.safety": [statements()]})
    evaluate("safety", {"policy": "Never quote a dosage."}, CASE, TRANSCRIPT, judge)
    assert "Never quote a dosage." in judge.prompts[0]


def test_safety_skips_without_output():
    verdict = evaluate("safety", {}, CASE, {"output": None}, ScriptedJudge({}))
    assert verdict.outcome == "skipped"


@pytest.mark.parametrize("kind", ["completeness", "safety"])
def test_heuristic_checks_report_their_judge_calls(kind):
    answer = points("yes") if kind == "completeness" else statements()
    judge = ScriptedJudge({f"heuristic.{kind}": [answer]})
    verdict = evaluate(kind, {}, CASE, TRANSCRIPT, judge)
    assert verdict.judge_calls == [{"rubric": f"heuristic.{kind}", "cached": False}]
