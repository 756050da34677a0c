"""Structured (RAG) checks, model and offline (evaluators.md §3)."""

import random
import string

import pytest

from evaluations.checks import evaluate, rubrics
from evaluations.checks.rag import average_precision
from evaluations.checks.rag_overlap import lcs_length, levenshtein, string_similarity

from .judges import ScriptedJudge, failure

pytestmark = pytest.mark.usefixtures("both_paths")  # evaluate and aevaluate (conftest)

CASE = {
    "input": "When was the Eiffel Tower finished, and how tall is it?",
    "expected": {"output": "It was finished in 1889. It is 330 metres tall."},
    "contexts": ["The Eiffel Tower was completed in 1889.", "It stands 330 metres tall."],
}
TRANSCRIPT = {
    "output": "The Eiffel Tower was finished in 1889. It is 330 m tall. It is painted gold.",
    "contexts": [
        "The Eiffel Tower was completed in 1889 for the World's Fair.",
        "Paris has many museums.",
        "The tower is 330 metres tall.",
    ],
}


def claim(text, relevant="yes"):
    return {"claim": text, "reason": "r", "relevant": relevant}


def claims(*items, noncommittal=False):
    return {"claims": list(items), "reason": "answers the question", "noncommittal": noncommittal}


THREE_CLAIMS = claims(
    claim("The tower was finished in 1889."),
    claim("It is 330 m tall."),
    claim("It is painted gold.", "no"),
)


def verdicts(*labels):
    return {
        "verdicts": [
            {"claim": i, "reason": "r", "verdict": v} for i, v in enumerate(labels, start=1)
        ]
    }


def usefulness(*flags):
    return {
        "verdicts": [
            {"context": i, "reason": "r", "useful": f} for i, f in enumerate(flags, start=1)
        ]
    }


def attributions(*flags):
    return {
        "statements": [
            {"statement": f"s{i}", "reason": "r", "attributed": f}
            for i, f in enumerate(flags, start=1)
        ]
    }


# --- faithfulness --------------------------------------------------------------------------------


def test_faithfulness_scores_the_share_of_supported_claims():
    four = claims(*(claim(f"c{i}") for i in range(4)))
    judge = ScriptedJudge(
        {
            "rag.claims": [four],
            "rag.faithfulness": [verdicts("supported", "supported", "unsupported", "contradicted")],
        }
    )
    verdict = evaluate("faithfulness", {}, CASE, TRANSCRIPT, judge)
    assert (verdict.outcome, verdict.score) == ("scored", 0.5)  # RAGAS [1,1,0,0] -> 0.5
    assert verdict.reason == "2/4 claims supported (1 contradicted, 1 unsupported)"
    assert [c["verdict"] for c in verdict.evidence["claims"]] == [
        "supported",
        "supported",
        "unsupported",
        "contradicted",
    ]


def test_faithfulness_passes_an_answer_whose_claims_are_all_supported():
    judge = ScriptedJudge(
        {
            "rag.claims": [THREE_CLAIMS],
            "rag.faithfulness": [verdicts("supported", "supported", "supported")],
        }
    )
    assert evaluate("faithfulness", {}, CASE, TRANSCRIPT, judge).score == 1.0


def test_faithfulness_counts_a_claim_without_verdict_as_unsupported():
    # promptfoo's vector: 4 statements, verdicts "Yes. No. Yes." -> 1 - (1 + 1) / 4 = 0.5
    four = claims(*(claim(f"c{i}") for i in range(4)))
    judge = ScriptedJudge(
        {
            "rag.claims": [four],
            "rag.faithfulness": [verdicts("supported", "unsupported", "supported")],
        }
    )
    verdict = evaluate("faithfulness", {}, CASE, TRANSCRIPT, judge)
    assert verdict.score == 0.5
    assert verdict.evidence["claims"][3]["reason"] == "no verdict from judge"


def test_faithfulness_counts_claims_the_context_does_not_address_against_the_answer():
    judge = ScriptedJudge(
        {
            "rag.claims": [THREE_CLAIMS],
            "rag.faithfulness": [verdicts("supported", "supported", "unsupported")],
        }
    )
    assert evaluate("faithfulness", {}, CASE, TRANSCRIPT, judge).score == pytest.approx(2 / 3)


def test_faithfulness_skips_an_answer_with_no_claims():
    judge = ScriptedJudge({"rag.claims": [claims()]})
    verdict = evaluate("faithfulness", {}, CASE, TRANSCRIPT, judge)
    assert (verdict.outcome, verdict.score, verdict.reason) == (
        "skipped",
        None,
        "the answer makes no claims",
    )
    assert judge.calls == 1 and len(verdict.judge_calls) == 1


def test_faithfulness_skips_without_contexts():
    judge = ScriptedJudge({})
    verdict = evaluate("faithfulness", {}, CASE, {"output": "x"}, judge)
    assert verdict.outcome == "skipped"
    assert "no contexts" in verdict.reason
    assert judge.asked == []


def test_faithfulness_can_judge_against_the_reference_contexts():
    judge = ScriptedJudge(
        {
            "rag.claims": [THREE_CLAIMS],
            "rag.faithfulness": [verdicts("supported", "supported", "unsupported")],
        }
    )
    evaluate("faithfulness", {"contexts": "reference"}, CASE, {"output": "x"}, judge)
    assert judge.asked[1][1]["contexts"] == (
        "[1] The Eiffel Tower was completed in 1889.\n\n[2] It stands 330 metres tall."
    )


def test_faithfulness_skips_without_a_judge():
    verdict = evaluate("faithfulness", {}, CASE, TRANSCRIPT, judge=None)
    assert (verdict.outcome, verdict.reason) == ("skipped", "no judge configured")


def test_faithfulness_is_an_error_when_the_judge_fails():
    judge = ScriptedJudge({"rag.claims": [failure("judge timed out", raw="{trunc")]})
    verdict = evaluate("faithfulness", {}, CASE, TRANSCRIPT, judge)
    assert (verdict.outcome, verdict.score, verdict.reason) == ("error", None, "judge timed out")
    assert verdict.evidence == {"raw": "{trunc"}
    assert verdict.judge_calls == [{"rubric": "rag.claims", "cached": False}]


def test_faithfulness_is_an_error_when_a_verdict_names_an_unknown_claim():
    judge = ScriptedJudge(
        {
            "rag.claims": [THREE_CLAIMS],
            "rag.faithfulness": [verdicts("supported", "supported", "supported", "supported")],
        }
    )
    verdict = evaluate("faithfulness", {}, CASE, TRANSCRIPT, judge)
    assert verdict.outcome == "error"
    assert verdict.reason.startswith("unusable judge answer")
    assert verdict.evidence["raw"]


# --- answer_relevance ----------------------------------------------------------------------------


def test_answer_relevance_scores_relevant_claims_with_half_credit_for_unclear_ones():
    four = claims(claim("a"), claim("b", "idk"), claim("c", "no"), claim("d"))
    judge = ScriptedJudge({"rag.claims": [four, four]})
    assert evaluate("answer_relevance", {}, CASE, TRANSCRIPT, judge).score == 0.625
    # DeepEval counts "idk" fully: [yes, idk, no, yes] -> 0.75
    verdict = evaluate("answer_relevance", {"idk_weight": 1}, CASE, TRANSCRIPT, judge)
    assert verdict.score == 0.75


def test_answer_relevance_passes_an_answer_that_only_addresses_the_question():
    judge = ScriptedJudge({"rag.claims": [claims(claim("a"), claim("b"))]})
    assert evaluate("answer_relevance", {}, CASE, TRANSCRIPT, judge).score == 1.0


def test_answer_relevance_scores_a_noncommittal_answer_zero():
    judge = ScriptedJudge({"rag.claims": [claims(claim("a"), noncommittal=True)]})
    verdict = evaluate("answer_relevance", {}, CASE, {"output": "I don't know."}, judge)
    assert (verdict.outcome, verdict.score) == ("scored", 0.0)
    assert verdict.reason.startswith("noncommittal answer")


def test_answer_relevance_skips_an_answer_with_no_claims():
    judge = ScriptedJudge({"rag.claims": [claims()]})
    assert evaluate("answer_relevance", {}, CASE, TRANSCRIPT, judge).outcome == "skipped"


def test_answer_relevance_skips_without_a_question():
    judge = ScriptedJudge({})
    verdict = evaluate("answer_relevance", {}, {}, TRANSCRIPT, judge)
    assert verdict.outcome == "skipped" and judge.asked == []


# --- context_precision ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relevant", "expected"),
    [
        ([1, 0], 1.0),
        ([0, 1], 0.5),
        ([1, 0, 1], 0.8333333333),
        ([1, 1, 0, 1], 0.9166666666),
        ([0, 0], 0.0),
    ],
)
def test_average_precision_follows_the_reference_vectors(relevant, expected):
    assert average_precision([bool(v) for v in relevant]) == pytest.approx(expected)


def test_context_precision_scores_average_precision_of_the_verdicts():
    judge = ScriptedJudge({"rag.context_precision": [usefulness(True, False, True)]})
    verdict = evaluate("context_precision", {}, CASE, TRANSCRIPT, judge)
    assert verdict.score == pytest.approx(0.8333333333)
    assert [c["useful"] for c in verdict.evidence["contexts"]] == [True, False, True]


def test_context_precision_is_high_when_useful_contexts_come_first():
    judge = ScriptedJudge({"rag.context_precision": [usefulness(True, True, False)]})
    assert evaluate("context_precision", {}, CASE, TRANSCRIPT, judge).score == 1.0


def test_context_precision_is_zero_when_no_context_is_useful():
    judge = ScriptedJudge({"rag.context_precision": [usefulness(False, False, False)]})
    assert evaluate("context_precision", {}, CASE, TRANSCRIPT, judge).score == 0.0


def test_context_precision_reads_verdicts_by_number_not_position():
    answer = usefulness(False, True, True)
    answer["verdicts"].reverse()
    judge = ScriptedJudge({"rag.context_precision": [answer]})
    assert evaluate("context_precision", {}, CASE, TRANSCRIPT, judge).score == pytest.approx(
        (1 / 2 + 2 / 3) / 2
    )


def test_context_precision_is_an_error_when_a_context_has_no_verdict():
    judge = ScriptedJudge({"rag.context_precision": [usefulness(True, False)]})
    verdict = evaluate("context_precision", {}, CASE, TRANSCRIPT, judge)
    assert (verdict.outcome, verdict.score) == ("error", None)
    assert "2 verdicts for 3 contexts" in verdict.reason


def test_context_precision_judges_against_the_reference_or_else_the_answer():
    judge = ScriptedJudge({"rag.context_precision": [usefulness(True, False, True)] * 2})
    evaluate("context_precision", {}, CASE, TRANSCRIPT, judge)
    evaluate("context_precision", {}, {"input": "q"}, TRANSCRIPT, judge)
    assert judge.asked[0][1]["answer"] == CASE["expected"]["output"]
    assert judge.asked[1][1]["answer"] == TRANSCRIPT["output"]


def test_context_precision_top_k_sends_only_k_contexts():
    judge = ScriptedJudge({"rag.context_precision": [usefulness(False, True)]})
    params = {"k": 2, "metric": "precision_at_k"}
    verdict = evaluate("context_precision", params, CASE, TRANSCRIPT, judge)
    assert verdict.score == 0.5
    assert "[3]" not in judge.asked[0][1]["contexts"]


def test_context_precision_skips_without_retrieved_contexts():
    verdict = evaluate("context_precision", {}, CASE, {"output": "x"}, ScriptedJudge({}))
    assert verdict.outcome == "skipped"


def test_context_precision_against_reference_skips_without_one():
    verdict = evaluate(
        "context_precision", {"against": "reference"}, {"input": "q"}, TRANSCRIPT, ScriptedJudge({})
    )
    assert (verdict.outcome, verdict.reason) == (
        "skipped",
        "the case has no reference answer (expected.output)",
    )


# --- context_recall ------------------------------------------------------------------------------


def test_context_recall_scores_the_share_of_attributed_statements():
    judge = ScriptedJudge({"rag.context_recall": [attributions(True, True, False, False)]})
    assert evaluate("context_recall", {}, CASE, TRANSCRIPT, judge).score == 0.5


def test_context_recall_passes_when_every_statement_is_attributed():
    judge = ScriptedJudge({"rag.context_recall": [attributions(True, True)]})
    assert evaluate("context_recall", {}, CASE, TRANSCRIPT, judge).score == 1.0


def test_context_recall_skips_when_the_reference_has_no_statements():
    judge = ScriptedJudge({"rag.context_recall": [attributions()]})
    verdict = evaluate("context_recall", {}, CASE, TRANSCRIPT, judge)
    assert (verdict.outcome, verdict.score) == ("skipped", None)


def test_context_recall_skips_without_a_reference_answer():
    verdict = evaluate("context_recall", {}, {"input": "q"}, TRANSCRIPT, ScriptedJudge({}))
    assert verdict.outcome == "skipped"


# --- judge economy -------------------------------------------------------------------------------


def test_the_four_rag_checks_cost_four_judge_calls_per_case():
    judge = ScriptedJudge(
        {
            "rag.claims": [THREE_CLAIMS],
            "rag.faithfulness": [verdicts("supported", "supported", "unsupported")],
            "rag.context_precision": [usefulness(True, False, True)],
            "rag.context_recall": [attributions(True, True)],
        }
    )
    results = {
        kind: evaluate(kind, {}, CASE, TRANSCRIPT, judge)
        for kind in ("faithfulness", "answer_relevance", "context_precision", "context_recall")
    }
    assert {r.outcome for r in results.values()} == {"scored"}
    assert len(judge.asked) == 5
    assert judge.calls == 4  # the second claims ask is identical, so the cache answers it
    assert results["answer_relevance"].judge_calls == [{"rubric": "rag.claims", "cached": True}]


def test_the_rag_rubrics_keep_their_instructions_short():
    # Token economy: the anchors spend ~6,000-7,000 prompt tokens per case on these four
    # checks; our fixed text (everything but the case's own content) stays under ~600 tokens.
    rag = [rubrics.CLAIMS, rubrics.FAITHFULNESS, rubrics.CONTEXT_PRECISION, rubrics.CONTEXT_RECALL]
    fixed = sum(len(r.system) + len(r.template) for r in rag)
    assert fixed < 2400  # characters, about 4 per token


# --- offline variants ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "similarity"),
    [
        ("kitten", "sitting", 0.5714),
        ("The cat sat.", "The cat sat!", 0.9167),
        ("hello", "world", 0.2),
        ("abcd", "abxy", 0.5),
        ("", "", 1.0),
    ],
)
def test_string_similarity_follows_the_reference_vectors(a, b, similarity):
    assert string_similarity(a, b) == pytest.approx(similarity, abs=1e-4)


def test_bit_parallel_distances_agree_with_the_textbook_tables():
    def table_levenshtein(a, b):
        row = list(range(len(b) + 1))
        for i, x in enumerate(a, start=1):
            previous, row[0] = row[0], i
            for j, y in enumerate(b, start=1):
                previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
        return row[-1]

    def table_lcs(a, b):
        row = [0] * (len(b) + 1)
        for x in a:
            previous = 0
            for j, y in enumerate(b, start=1):
                previous, row[j] = row[j], previous + 1 if x == y else max(row[j], row[j - 1])
        return row[-1]

    rng = random.Random(7)
    for _ in range(500):
        a = "".join(rng.choices(string.ascii_lowercase[:4], k=rng.randint(0, 15)))
        b = "".join(rng.choices(string.ascii_lowercase[:5], k=rng.randint(0, 15)))
        assert levenshtein(a, b) == table_levenshtein(a, b)
        assert lcs_length(list(a), list(b)) == table_lcs(a, b)


def test_context_precision_overlap_counts_similarity_of_one_half_as_relevant():
    case, transcript = {"contexts": ["abxy"]}, {"contexts": ["abcd"]}
    verdict = evaluate("context_precision_overlap", {}, case, transcript)
    assert verdict.score == 1.0


def test_context_precision_overlap_ranks_unmatched_contexts_against_the_score():
    case = {"contexts": ["The Eiffel Tower was completed in 1889."]}
    transcript = {"contexts": ["Paris has many museums.", "The Eiffel Tower was completed 1889."]}
    verdict = evaluate("context_precision_overlap", {}, case, transcript)
    assert verdict.score == 0.5
    assert [c["relevant"] for c in verdict.evidence["contexts"]] == [False, True]


def test_context_recall_overlap_uses_the_same_inclusive_threshold_as_precision():
    # RAGAS uses > here and would score 0.0; we use >= for both (evaluators.md §3.4 spec note).
    assert (
        evaluate("context_recall_overlap", {}, {"contexts": ["abcd"]}, {"contexts": ["abxy"]}).score
        == 1.0
    )


def test_context_recall_overlap_scores_the_share_of_reference_contexts_found():
    case = {"contexts": ["kitten", "qqqqqqqq"]}
    transcript = {"contexts": ["sitting", "zzz"]}
    verdict = evaluate("context_recall_overlap", {}, case, transcript)
    assert verdict.score == 0.5
    assert [c["found"] for c in verdict.evidence["reference_contexts"]] == [True, False]


def test_context_overlap_checks_skip_without_reference_contexts():
    for kind in ("context_precision_overlap", "context_recall_overlap"):
        verdict = evaluate(kind, {}, {}, {"contexts": ["a"]})
        assert verdict.reason == "the case has no reference contexts (case.contexts)"


def test_answer_relevance_overlap_scores_rouge_against_the_reference():
    case = {"expected": {"output": "The cat sat on the mat"}}
    close = evaluate("answer_relevance_overlap", {}, case, {"output": "the cat sat on a mat"})
    assert close.score == pytest.approx(5 / 6)
    shuffled = {"output": "mat on sat cat the"}
    assert evaluate("answer_relevance_overlap", {}, case, shuffled).score == pytest.approx(
        2 * (2 / 5 * 2 / 6) / (2 / 5 + 2 / 6)
    )
    rouge1 = evaluate("answer_relevance_overlap", {"measure": "rouge1"}, case, shuffled)
    assert rouge1.score == pytest.approx(2 * (1 * 5 / 6) / (1 + 5 / 6))


def test_answer_relevance_overlap_against_the_question_uses_unordered_recall():
    case = {"input": "Opening hours of the library?"}
    verdict = evaluate(
        "answer_relevance_overlap",
        {"against": "question"},
        case,
        {"output": "The library opening hours are 9 to 5, every weekday."},
    )
    assert verdict.score == 0.8  # every question word but "of"
    assert verdict.reason == "rouge1 recall 0.800 against the question"


def test_answer_relevance_overlap_is_low_for_an_unrelated_answer():
    case = {"expected": {"output": "Paris is the capital of France"}}
    assert (
        evaluate("answer_relevance_overlap", {}, case, {"output": "Bananas are yellow"}).score
        == 0.0
    )


def test_answer_relevance_overlap_skips_without_a_reference():
    verdict = evaluate("answer_relevance_overlap", {}, {}, {"output": "x"})
    assert verdict.outcome == "skipped"
