"""Checks never fail open on empty inputs (docs/checks.md, "Empty inputs"): present-but-empty
is not absent. A name-only tool may be a plain string inside an expected list (never in a
transcript); `[]` expected with `match: exact` means no tool may be called; an explicit empty
retrieval scores 0 recall; an empty answer scores 0 relevance; a params error names the field
that is actually missing."""

import pytest

from evaluations.actions.create_case import CreateCase
from evaluations.checks import ParamsError, evaluate, validate_params
from sherlock.core.errors import ActionInvalid
from sherlock.core.transcripts import read_calls, read_expected_calls
from tests.support import factories

from .judges import ScriptedJudge

pytestmark = pytest.mark.usefixtures("both_paths")  # evaluate and aevaluate (conftest)

NO_CALLS = {"output": "done", "tool_calls": []}
ONE_CALL = {"output": "done", "tool_calls": [{"name": "email.send", "arguments": {}}]}


# --- plain strings in an expected list -----------------------------------------------------------


def test_a_plain_string_in_expected_tools_is_a_name_only_call():
    case = {"expected_tools": ["email.send", {"name": "kb.search", "arguments": {"q": "x"}}]}
    transcript = {
        "tool_calls": [
            {"name": "email.send", "arguments": {"to": "a"}},
            {"name": "kb.search", "arguments": {"q": "x"}},
        ]
    }
    verdict = evaluate("tools_used", {}, case, transcript)
    assert (verdict.outcome, verdict.score) == ("scored", 1.0)
    assert verdict.evidence["expected"] == ["email.send", 'kb.search({"q": "x"})']


def test_a_plain_string_in_a_reference_trajectory_is_a_name_only_call():
    case = {"expected": {"trajectory": ["email.send"]}}
    verdict = evaluate("trajectory", {"metric": "exact"}, case, ONE_CALL)
    assert (verdict.outcome, verdict.score) == ("scored", 1.0)


def test_a_bare_string_where_the_list_belongs_stays_an_error():
    verdict = evaluate("tools_used", {}, {"expected_tools": "email.send"}, ONE_CALL)
    assert verdict.outcome == "error"
    assert "must be a list of tool calls, got str" in verdict.reason
    verdict = evaluate(
        "trajectory", {"metric": "exact"}, {"expected": {"trajectory": "x"}}, ONE_CALL
    )
    assert verdict.outcome == "error"


def test_a_transcripts_tool_calls_stay_strict():
    with pytest.raises(ValueError, match="a tool call must be an object"):
        read_calls(["email.send"], "tool_calls")
    verdict = evaluate("tools_used", {"tools": ["email.send"]}, {}, {"tool_calls": ["email.send"]})
    assert verdict.outcome == "error"
    assert [c.name for c in read_expected_calls(["email.send"], "expected tools")] == ["email.send"]
    with pytest.raises(ValueError, match="empty"):
        read_expected_calls([""], "expected tools")


def test_a_case_may_list_expected_tools_as_plain_names(editor):
    draft = factories.dataset_version(frozen=False)
    case_version = CreateCase(
        acting_user=editor,
        dataset_version=draft,
        key="refund",
        input="Refund A-1",
        expected_tools=["kb.search", {"name": "refunds.create", "arguments": {"order": "A-1"}}],
    ).execute()
    assert case_version.expected_tools[0] == "kb.search"


@pytest.mark.parametrize("tool", ["", 7, {"arguments": {}}, {"name": 3}, None])
def test_a_case_refuses_an_expected_tool_without_a_name(editor, tool):
    draft = factories.dataset_version(frozen=False)
    with pytest.raises(ActionInvalid) as refused:
        CreateCase(
            acting_user=editor,
            dataset_version=draft,
            key="refund",
            input="x",
            expected_tools=["kb.search", tool],
        ).execute()
    assert refused.value.field == "expected_tools[1]"


# --- tools_used: an explicit empty list ----------------------------------------------------------


def test_an_empty_expected_list_with_exact_match_means_no_tool_may_be_called():
    case = {"expected_tools": []}
    passed = evaluate("tools_used", {"match": "exact"}, case, NO_CALLS)
    assert (passed.outcome, passed.score) == ("scored", 1.0)
    failed = evaluate("tools_used", {"match": "exact"}, case, ONE_CALL)
    assert (failed.outcome, failed.score) == ("scored", 0.0)
    assert failed.reason == "tools called where none may be: email.send({})"


def test_empty_params_tools_with_exact_match_win_over_the_cases_list():
    case = {"expected_tools": ["email.send"]}
    verdict = evaluate("tools_used", {"tools": [], "match": "exact"}, case, ONE_CALL)
    assert (verdict.outcome, verdict.score) == ("scored", 0.0)


def test_an_empty_list_cannot_score_without_exact_match():
    with pytest.raises(ParamsError) as error:
        validate_params("tools_used", {"tools": []})
    assert error.value.field == "tools"
    with pytest.raises(ParamsError):
        validate_params("tools_used", {"tools": [], "match": "exact", "forbidden": True})
    verdict = evaluate("tools_used", {}, {"expected_tools": []}, ONE_CALL)
    assert verdict.outcome == "skipped" and "match: exact" in verdict.reason


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ({"match": "in_order"}, "with match: in_order calls besides the expected ones are allowed"),
        ({"match": "any_order"}, "with match: any_order calls besides"),
        ({"match": "exact", "forbidden": True}, "a guardrail that forbids no tool forbids nothing"),
    ],
)
def test_a_case_without_tools_skips_saying_why_nothing_could_fail(params, why):
    # A stored case saved without expected tools holds [] (CaseVersion.as_check_input).
    verdict = evaluate("tools_used", params, {"expected_tools": []}, ONE_CALL)
    assert verdict.outcome == "skipped"
    assert verdict.reason.startswith(f"the case lists no tools: {why}")
    assert "use match: exact (a case override)" in verdict.reason


def test_an_absent_expected_list_still_skips():
    verdict = evaluate("tools_used", {"match": "exact"}, {}, NO_CALLS)
    assert verdict.outcome == "skipped" and "no expected tools" in verdict.reason


def test_an_empty_expected_list_skips_a_transcript_that_records_no_calls():
    verdict = evaluate("tools_used", {"match": "exact"}, {"expected_tools": []}, {"output": "x"})
    assert verdict.outcome == "skipped"


# --- context recall: an explicit empty retrieval -------------------------------------------------

CASE = {
    "input": "When was the Eiffel Tower finished?",
    "expected": {"output": "It was finished in 1889."},
    "contexts": ["The Eiffel Tower was completed in 1889."],
}


@pytest.mark.parametrize("contexts", [[], ["", "  "]])
def test_an_explicit_empty_retrieval_scores_zero_context_recall(contexts):
    judge = ScriptedJudge({})
    transcript = {"output": "1889.", "contexts": contexts}
    verdict = evaluate("context_recall", {}, CASE, transcript, judge)
    assert (verdict.outcome, verdict.score) == ("scored", 0.0)
    assert judge.asked == []  # nothing to ask: nothing was retrieved
    # Without a judge it is just as certain.
    assert evaluate("context_recall", {}, CASE, transcript).score == 0.0
    offline = evaluate("context_recall_overlap", {}, CASE, transcript)
    assert (offline.outcome, offline.score) == ("scored", 0.0)


def test_absent_contexts_still_skip_context_recall():
    for kind in ("context_recall", "context_recall_overlap"):
        verdict = evaluate(kind, {}, CASE, {"output": "1889."}, ScriptedJudge({}))
        assert verdict.outcome == "skipped", kind


def test_an_empty_retrieval_without_a_reference_still_skips():
    verdict = evaluate("context_recall", {}, {"input": "q"}, {"output": "x", "contexts": []})
    assert verdict.outcome == "skipped"


# --- answer relevance: an empty answer -----------------------------------------------------------


@pytest.mark.parametrize("output", ["", "   "])
def test_an_empty_answer_scores_zero_answer_relevance(output):
    judge = ScriptedJudge({})
    verdict = evaluate("answer_relevance", {}, CASE, {"output": output}, judge)
    assert (verdict.outcome, verdict.score) == ("scored", 0.0)
    assert verdict.reason == "the answer is empty" and judge.asked == []
    assert evaluate("answer_relevance", {}, CASE, {"output": output}).score == 0.0


@pytest.mark.parametrize("against", ["reference", "question"])
def test_an_empty_answer_scores_zero_offline_answer_relevance(against):
    verdict = evaluate("answer_relevance_overlap", {"against": against}, CASE, {"output": ""})
    assert (verdict.outcome, verdict.score) == ("scored", 0.0)


def test_a_missing_answer_still_skips_answer_relevance():
    for kind in ("answer_relevance", "answer_relevance_overlap"):
        assert evaluate(kind, {}, CASE, {}, ScriptedJudge({})).outcome == "skipped", kind


# --- a params error names the field that is missing ----------------------------------------------


@pytest.mark.parametrize(
    "kind, params, field",
    [
        ("trajectory", {}, "metric"),  # was "tool_name: is required"
        ("output_type", {}, "type"),  # was "schema: is required"
        ("trajectory", {"metric": "single_tool_use"}, "tool_name"),
        ("output_type", {"type": "json_schema"}, "schema"),
    ],
)
def test_a_params_error_names_the_field_that_is_missing(kind, params, field):
    with pytest.raises(ParamsError) as error:
        validate_params(kind, params)
    assert (error.value.field, error.value.message) == (field, "is required")


def test_an_empty_answer_is_not_a_faithfulness_verdict():
    # Faithfulness keeps its rule: an answer with no claims is skipped (RAGAS NaN).
    judge = ScriptedJudge({"rag.claims": [{"claims": [], "reason": "", "noncommittal": False}]})
    verdict = evaluate("faithfulness", {}, CASE, {"output": "", "contexts": ["x"]}, judge)
    assert verdict.outcome == "skipped"
