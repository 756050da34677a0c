"""Structured (RAG) checks that need no model (`*_overlap`): token and string overlap as in
RAGAS' non-LLM metrics (evaluators.md §3.3-3.5). They are cheaper, cruder and labelled as such;
their model counterparts are in `rag`, whose input readers they share."""

from __future__ import annotations

import re
from collections import Counter

from .base import (
    CheckKind,
    CheckVerdict,
    as_text,
    has_output,
    params_object,
    question_text,
    register,
    scored,
    skipped,
)
from .rag import (
    NOTHING_RETRIEVED,
    average_precision,
    context_texts,
    reference_answer,
    retrieved_nothing,
)


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def lcs_length(a: list, b: list) -> int:
    """Longest common subsequence, bit-parallel (Allison-Dix): one big-int step per item of b,
    so ROUGE-L on long answers stays fast in pure Python."""
    if not a or not b:
        return 0
    masks: dict = {}
    for i, item in enumerate(a):
        masks[item] = masks.get(item, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for item in b:
        u = v & masks.get(item, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def levenshtein(a: str, b: str) -> int:
    """Edit distance, bit-parallel (Myers 1999, Hyyrö's formulation): contexts are thousands of
    characters long and a quadratic table per pair would take seconds in pure Python."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    peq: dict[str, int] = {}
    for i, ch in enumerate(b):
        peq[ch] = peq.get(ch, 0) | (1 << i)
    full, last = (1 << len(b)) - 1, 1 << (len(b) - 1)
    pv, mv, distance = full, 0, len(b)
    for ch in a:
        eq = peq.get(ch, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | (~(xh | pv) & full)
        mh = pv & xh
        if ph & last:
            distance += 1
        elif mh & last:
            distance -= 1
        ph = ((ph << 1) | 1) & full
        mh = (mh << 1) & full
        pv = mh | (~(xv | ph) & full)
        mv = ph & xv
    return distance


def string_similarity(a: str, b: str) -> float:
    """1 - Levenshtein distance / longer length (RAGAS NonLLMStringSimilarity, rapidfuzz)."""
    longest = max(len(a), len(b))
    return 1.0 if longest == 0 else 1 - levenshtein(a, b) / longest


def overlap_scores(candidate: list[str], reference: list[str], measure: str) -> dict:
    if measure == "rouge1":
        common = sum((Counter(candidate) & Counter(reference)).values())
    else:
        common = lcs_length(candidate, reference)
    precision, recall = common / len(candidate), common / len(reference)
    f = 2 * precision * recall / (precision + recall) if common else 0.0
    return {"precision": precision, "recall": recall, "fmeasure": f}


_THRESHOLD = {
    "type": "number",
    "minimum": 0,
    "maximum": 1,
    "default": 0.5,
    "description": "A context counts as found when similarity >= this.",
}


@register
class AnswerRelevanceOverlap(CheckKind):
    """Offline answer relevance: ROUGE overlap of the answer's words with a target text.

    Against the reference answer (default) it is RAGAS RougeScore: rougeL F-measure. Against
    the question, `auto` means rouge1 recall, the share of the question's words the answer takes
    up, in any order: an answer is longer than its question and rarely repeats it in order.
    Words are Unicode word characters, case-folded; there is no stemming or stop-word list.
    Cheap and crude: it rewards shared wording, not meaning. An empty answer (no words) scores
    0; a missing output or target is skipped.
    """

    kind = "answer_relevance_overlap"
    group = "structured"
    offline = True
    needs = ("output", "expected.output")
    description = "Offline: word overlap (ROUGE) of the answer with the reference or question."
    params_schema = params_object(
        {
            "against": {
                "enum": ["reference", "question"],
                "default": "reference",
                "description": "Compare the answer with the reference answer or the question.",
            },
            "measure": {
                "enum": ["auto", "rougeL", "rouge1"],
                "default": "auto",
                "description": "auto: rougeL against the reference, rouge1 against the question.",
            },
            "mode": {
                "enum": ["auto", "fmeasure", "precision", "recall"],
                "default": "auto",
                "description": "auto: F against the reference, recall against the question.",
            },
        }
    )

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        if not has_output(transcript):
            return skipped("no output")
        target = reference_answer(case) if params["against"] == "reference" else question_text(case)
        if target is None:
            return skipped(
                "the case has no "
                + (
                    "reference answer (expected.output)"
                    if params["against"] == "reference"
                    else "input (question)"
                )
            )
        answer, target_words = words(as_text(transcript["output"])), words(target)
        if not target_words:
            return skipped(f"no words to compare in the {params['against']}")
        if not answer:
            # An empty answer shares nothing with its target: 0, not a skip.
            return scored(
                0.0, "the answer has no words: no overlap", {"answer": transcript["output"]}
            )
        by_reference = params["against"] == "reference"
        measure, mode = params["measure"], params["mode"]
        measure = measure if measure != "auto" else ("rougeL" if by_reference else "rouge1")
        mode = mode if mode != "auto" else ("fmeasure" if by_reference else "recall")
        values = overlap_scores(answer, target_words, measure)
        return scored(
            values[mode],
            f"{measure} {mode} {values[mode]:.3f} against the {params['against']}",
            values,
        )


class ContextOverlap(CheckKind):
    """Shared matching of retrieved contexts against the case's reference contexts."""

    group = "structured"
    offline = True
    needs = ("contexts", "reference_contexts")

    def pairs(self, params, case, transcript):
        retrieved = context_texts(transcript.get("contexts"))[: params.get("k")]
        reference = context_texts(case.get("contexts"))
        if not retrieved:
            return skipped("no retrieved contexts (transcript.contexts)")
        if not reference:
            return skipped("the case has no reference contexts (case.contexts)")
        # similarity[i][j]: retrieved i against reference j
        return (
            retrieved,
            reference,
            [[string_similarity(r, c) for c in reference] for r in retrieved],
        )


@register
class ContextPrecisionOverlap(ContextOverlap):
    """Offline context precision (RAGAS NonLLMContextPrecisionWithReference).

    A retrieved context is relevant when its string similarity (1 - normalized Levenshtein) to
    some reference context is >= `similarity_threshold` (0.5); the score is average precision
    over the ranked relevance, as for `context_precision`.
    """

    kind = "context_precision_overlap"
    description = "Offline: retrieved contexts similar to reference contexts, rank-aware."
    params_schema = params_object(
        {
            "similarity_threshold": _THRESHOLD,
            "k": {"type": "integer", "minimum": 1, "description": "Only the first k contexts."},
        }
    )

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        loaded = self.pairs(params, case, transcript)
        if isinstance(loaded, CheckVerdict):
            return loaded
        retrieved, _, similarity = loaded
        best = [max(row) for row in similarity]
        relevant = [b >= params["similarity_threshold"] for b in best]
        score = average_precision(relevant)
        return scored(
            score,
            f"{sum(relevant)}/{len(relevant)} retrieved contexts match a "
            f"reference context, average precision {score:.3f}",
            {
                "contexts": [
                    {"rank": i, "best_similarity": round(b, 4), "relevant": r}
                    for i, (b, r) in enumerate(zip(best, relevant, strict=True), start=1)
                ]
            },
        )


@register
class ContextRecallOverlap(ContextOverlap):
    """Offline context recall (RAGAS NonLLMContextRecall): share of reference contexts that some
    retrieved context resembles (similarity >= `similarity_threshold`).

    RAGAS uses `>` here but `>=` for precision, so a pair at exactly 0.5 counts for one and not
    the other; we use `>=` for both (evaluators.md §3.4 spec note). An explicit empty retrieval
    (`contexts: []`) scores 0, as for `context_recall`.
    """

    kind = "context_recall_overlap"
    description = "Offline: share of reference contexts found among the retrieved ones."
    params_schema = params_object({"similarity_threshold": _THRESHOLD})

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        if retrieved_nothing(transcript) and context_texts(case.get("contexts")):
            return scored(0.0, NOTHING_RETRIEVED, {"contexts": transcript["contexts"]})
        loaded = self.pairs(params, case, transcript)
        if isinstance(loaded, CheckVerdict):
            return loaded
        _, reference, similarity = loaded
        best = [max(row[j] for row in similarity) for j in range(len(reference))]
        found = [b >= params["similarity_threshold"] for b in best]
        return scored(
            sum(found) / len(found),
            f"{sum(found)}/{len(found)} reference contexts found",
            {
                "reference_contexts": [
                    {"index": j, "best_similarity": round(b, 4), "found": f}
                    for j, (b, f) in enumerate(zip(best, found, strict=True), start=1)
                ]
            },
        )
