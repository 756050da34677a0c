"""Structured (RAG) checks: is the answer faithful to, and was retrieval right for, the documents?

Faithfulness is the headline check for agents that answer from a collection: it catches
invention. The two context checks are diagnostics for when answers are faithful but thin.

Judge economy (at most 5 judge calls per case for the four model checks; this design uses 4):
`faithfulness` and `answer_relevance` ask the *same* claims rubric with the *same* variables,
so the judge's cache (model, prompt, params) answers the second ask without a call; one call
then judges all claims against all contexts; one call judges every context for precision; one
call attributes the reference's statements for recall. Each answer carries its per-item reasons,
so no extra "reason" call is ever made (DeepEval makes one; evaluators.md §1.1). A claims ask
that failed is not asked again in the same trial either: the second check is `error` with the
same reason, without a call (the judge keeps a trial's failures, `evaluations.judge.client`).

The offline kinds (`*_overlap`), which need no model, are in `rag_overlap`.
"""

from __future__ import annotations

from collections import Counter

from . import rubrics
from .base import (
    CheckVerdict,
    ModelCheck,
    as_text,
    expected,
    has_output,
    params_object,
    question_text,
    register,
    scored,
    skipped,
)

# --- inputs --------------------------------------------------------------------------------------


def context_texts(values) -> list[str]:
    """Contexts as strings; a context object gives its `text`, `content` or `page_content`."""
    texts = []
    for value in values or []:
        if isinstance(value, dict):
            value = next(
                (value[k] for k in ("text", "content", "page_content") if k in value), value
            )
        text = as_text(value).strip()
        if text:
            texts.append(text)
    return texts


def reference_answer(case: dict) -> str | None:
    value = expected(case, "output")
    return None if value is None or as_text(value).strip() == "" else as_text(value)


# --- empty inputs (docs/checks.md, "Empty inputs"): present but empty is not absent ---------

NOTHING_RETRIEVED = "nothing was retrieved (transcript.contexts is empty): 0 recall"


def retrieved_nothing(transcript: dict) -> bool:
    """The agent reported its retrieval and it found nothing: `contexts` is a list (so not
    absent) holding no text. Recall of nothing is 0, not unknown."""
    contexts = transcript.get("contexts")
    return isinstance(contexts, list) and not context_texts(contexts)


def is_empty_answer(transcript: dict) -> bool:
    """The agent answered with an empty (or blank) string: scored 0 for relevance."""
    output = transcript.get("output")
    return isinstance(output, str) and not output.strip()


def numbered_contexts(contexts: list[str]) -> str:
    return "\n\n".join(f"[{i}] {text}" for i, text in enumerate(contexts, start=1))


# --- the shared claims step ----------------------------------------------------------------------


def claims_variables(case: dict, transcript: dict) -> dict:
    # Both faithfulness and answer_relevance build their variables here, and only here, so the
    # two asks are byte-identical and the judge's cache serves the second one.
    return {
        "question": question_text(case) or "(not given)",
        "answer": as_text(transcript["output"]),
    }


async def extract_claims(session, case: dict, transcript: dict) -> dict:
    data = await session.ask(rubrics.CLAIMS, claims_variables(case, transcript))
    claims = []
    for item in data.get("claims") or []:
        if not isinstance(item, dict) or item.get("relevant") not in ("yes", "no", "idk"):
            raise session.unusable("a claim lacks a yes/no/idk relevance", data=data)
        if str(item.get("claim", "")).strip():
            claims.append(
                {
                    "claim": item["claim"].strip(),
                    "relevant": item["relevant"],
                    "reason": item.get("reason", ""),
                }
            )
    return {
        "claims": claims,
        "noncommittal": bool(data.get("noncommittal")),
        "reason": data.get("reason", ""),
    }


def verdicts_by_number(session, items: list, key: str, count: int, data: dict) -> dict:
    """{number: item} for the judge's numbered verdicts; numbers outside 1..count are an error."""
    found: dict[int, dict] = {}
    for item in items or []:
        number = item.get(key) if isinstance(item, dict) else None
        if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= count:
            raise session.unusable(f"verdict for {key} {number!r}, expected 1..{count}", data=data)
        found.setdefault(number, item)  # a repeated number: the first verdict stands
    return found


def average_precision(relevant: list[bool]) -> float:
    """Σ_k precision@k · v_k / Σ_k v_k, exactly: no RAGAS epsilon, 0 when nothing is relevant
    (evaluators.md §3.3: [1,0] -> 1.0, [0,1] -> 0.5, [1,0,1] -> 0.8333, [1,1,0,1] -> 0.9167)."""
    total, hits = 0.0, 0
    for k, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def rank_score(relevant: list[bool], metric: str) -> float:
    if metric == "precision_at_k":
        return sum(relevant) / len(relevant)
    return average_precision(relevant)


# --- model kinds ---------------------------------------------------------------------------------


@register
class Faithfulness(ModelCheck):
    """Share of the answer's claims supported by the contexts (RAGAS semantics).

    Our definition is "every claim is supported", so a claim the contexts neither support nor
    contradict counts against the answer like a contradicted one (RAGAS, promptfoo), not for it
    (DeepEval's default); the evidence still tells the two apart. A claim the judge gave no
    verdict counts as unsupported rather than being dropped (evaluators.md §3.1 spec note).
    An answer with no claims is `skipped` (RAGAS NaN), neither 1 (DeepEval) nor 0. Contexts are
    the retrieved ones by default; `contexts: reference` judges against the case's contexts.
    """

    kind = "faithfulness"
    group = "structured"
    needs = ("output", "contexts")
    description = "Every claim in the answer is supported by the retrieved contexts."
    params_schema = params_object(
        {
            "contexts": {
                "enum": ["retrieved", "reference"],
                "default": "retrieved",
                "description": "Judge against the transcript's contexts or the case's.",
            }
        }
    )

    def contexts(self, params, case, transcript):
        if params["contexts"] == "reference":
            return context_texts(case.get("contexts"))
        return context_texts(transcript.get("contexts"))

    def missing_input(self, params, case, transcript):
        if not self.contexts(params, case, transcript):
            where = "case.contexts" if params["contexts"] == "reference" else "transcript.contexts"
            return f"no contexts to check the answer against ({where})"
        return super().missing_input(params, case, transcript)

    async def judge_case(self, params, case, transcript, session) -> CheckVerdict:
        extracted = await extract_claims(session, case, transcript)
        claims = extracted["claims"]
        if not claims:
            return skipped(
                "the answer makes no claims", {"noncommittal": extracted["noncommittal"]}
            )
        contexts = self.contexts(params, case, transcript)
        data = await session.ask(
            rubrics.FAITHFULNESS,
            {
                "contexts": numbered_contexts(contexts),
                "claims": "\n".join(f"{i}. {c['claim']}" for i, c in enumerate(claims, start=1)),
            },
        )
        verdicts = verdicts_by_number(session, data.get("verdicts"), "claim", len(claims), data)
        report = []
        for i, claim in enumerate(claims, start=1):
            item = verdicts.get(i, {"verdict": "unsupported", "reason": "no verdict from judge"})
            report.append(
                {
                    "claim": claim["claim"],
                    "verdict": item.get("verdict"),
                    "reason": item.get("reason", ""),
                }
            )
        counts = Counter(r["verdict"] for r in report)
        supported = counts["supported"]
        reason = f"{supported}/{len(report)} claims supported"
        if len(report) > supported:
            reason += (
                f" ({counts['contradicted']} contradicted, "
                f"{len(report) - supported - counts['contradicted']} unsupported)"
            )
        return scored(supported / len(report), reason, {"claims": report})


@register
class AnswerRelevance(ModelCheck):
    """Does the answer address the question: share of its claims relevant to the question.

    Statement verdicts (DeepEval's variant; no embedding model needed) read from the same
    claims answer faithfulness uses, so it costs no extra call. "idk" claims (background,
    unclear) count `idk_weight` (default 0.5; DeepEval counts them fully, weight 1). A
    noncommittal answer ("I don't know") scores 0, as RAGAS does, and so does an empty one
    (`""`: no judge asked); an answer with no claims otherwise is `skipped`.
    """

    kind = "answer_relevance"
    group = "structured"
    needs = ("input", "output")
    description = "The answer addresses the question that was asked."
    params_schema = params_object(
        {
            "idk_weight": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 0.5,
                "description": "Credit for a claim the judge finds unclear.",
            }
        }
    )

    def missing_input(self, params, case, transcript):
        if question_text(case) is None:
            return "the case has no input (question)"
        return super().missing_input(params, case, transcript)

    def without_judge(self, params, case, transcript) -> CheckVerdict | None:
        # An empty answer addresses nothing: 0, with or without a judge (not a skip, which
        # would let an agent that says nothing leave the check unscored).
        if question_text(case) is not None and is_empty_answer(transcript):
            return scored(0.0, "the answer is empty", {"answer": transcript["output"]})
        return None

    async def judge_case(self, params, case, transcript, session) -> CheckVerdict:
        extracted = await extract_claims(session, case, transcript)
        claims = extracted["claims"]
        evidence = {
            "claims": claims,
            "noncommittal": extracted["noncommittal"],
            "noncommittal_reason": extracted["reason"],
        }
        if extracted["noncommittal"]:
            return scored(0.0, f"noncommittal answer: {extracted['reason']}", evidence)
        if not claims:
            return skipped("the answer makes no claims", evidence)
        counts = Counter(c["relevant"] for c in claims)
        score = (counts["yes"] + params["idk_weight"] * counts["idk"]) / len(claims)
        return scored(
            score,
            f"{counts['yes']} relevant, {counts['idk']} unclear, "
            f"{counts['no']} off-topic of {len(claims)} claims",
            evidence,
        )


@register
class ContextPrecision(ModelCheck):
    """Were the useful contexts ranked first: average precision over per-context verdicts.

    One call judges every retrieved context (in rank order) as useful or not for reaching the
    reference answer, or the agent's own answer when the case has none (`against: auto`; RAGAS
    ContextPrecision vs ContextUtilization). A verdict count that does not match the contexts is
    a judge error (evaluators.md §3.3 spec note). `k` limits the check to the top k contexts
    (and the tokens sent); `metric: precision_at_k` gives the plain share of useful contexts.
    """

    kind = "context_precision"
    group = "structured"
    needs = ("contexts", "expected.output")
    description = "Retrieval ranked the useful contexts first (average precision)."
    params_schema = params_object(
        {
            "against": {
                "enum": ["auto", "reference", "answer"],
                "default": "auto",
                "description": "What a useful context supports: the reference answer or the "
                "answer given (auto: the reference when the case has one).",
            },
            "metric": {
                "enum": ["average_precision", "precision_at_k"],
                "default": "average_precision",
                "description": "precision_at_k: the share of useful contexts among the first k.",
            },
            "k": {"type": "integer", "minimum": 1, "description": "Only the first k contexts."},
        }
    )

    def target(self, params, case, transcript) -> str | None:
        if params["against"] in ("auto", "reference") and reference_answer(case):
            return reference_answer(case)
        if params["against"] in ("auto", "answer") and has_output(transcript):
            return as_text(transcript["output"])
        return None

    def missing_input(self, params, case, transcript):
        if not context_texts(transcript.get("contexts")):
            return "no retrieved contexts (transcript.contexts)"
        if self.target(params, case, transcript) is None:
            if params["against"] == "answer":
                return "no output"
            return "the case has no reference answer (expected.output)" + (
                "" if params["against"] == "reference" else " and there is no output"
            )
        return None

    async def judge_case(self, params, case, transcript, session) -> CheckVerdict:
        contexts = context_texts(transcript.get("contexts"))[: params.get("k")]
        data = await session.ask(
            rubrics.CONTEXT_PRECISION,
            {
                "question": question_text(case) or "(not given)",
                "answer": self.target(params, case, transcript),
                "contexts": numbered_contexts(contexts),
            },
        )
        verdicts = verdicts_by_number(session, data.get("verdicts"), "context", len(contexts), data)
        if len(verdicts) != len(contexts):
            raise session.unusable(
                f"{len(verdicts)} verdicts for {len(contexts)} contexts", data=data
            )
        relevant = [bool(verdicts[i]["useful"]) for i in range(1, len(contexts) + 1)]
        report = [
            {"rank": i, "useful": relevant[i - 1], "reason": verdicts[i].get("reason", "")}
            for i in range(1, len(contexts) + 1)
        ]
        score = rank_score(relevant, params["metric"])
        return scored(
            score,
            f"{sum(relevant)}/{len(relevant)} contexts useful, "
            f"{params['metric'].replace('_', ' ')} {score:.3f}",
            {"contexts": report},
        )


@register
class ContextRecall(ModelCheck):
    """Did retrieval find enough: share of the reference answer's statements the contexts back.

    One call, RAGAS LLMContextRecall: the judge splits the reference answer into statements and
    attributes each to the contexts or not. No reference answer, or none of its statements
    found, is `skipped` (RAGAS NaN), never 1. An explicit empty retrieval (`contexts: []`, or
    only blank contexts) found nothing: 0, no judge asked; absent `contexts` is skipped.
    """

    kind = "context_recall"
    group = "structured"
    needs = ("contexts", "expected.output")
    description = "The retrieved contexts contain what the reference answer needs."
    params_schema = params_object({})

    def missing_input(self, params, case, transcript):
        if not context_texts(transcript.get("contexts")):
            return "no retrieved contexts (transcript.contexts)"
        if reference_answer(case) is None:
            return "the case has no reference answer (expected.output)"
        return None

    def without_judge(self, params, case, transcript) -> CheckVerdict | None:
        if retrieved_nothing(transcript) and reference_answer(case) is not None:
            return scored(0.0, NOTHING_RETRIEVED, {"contexts": transcript["contexts"]})
        return None

    async def judge_case(self, params, case, transcript, session) -> CheckVerdict:
        data = await session.ask(
            rubrics.CONTEXT_RECALL,
            {
                "question": question_text(case) or "(not given)",
                "contexts": numbered_contexts(context_texts(transcript.get("contexts"))),
                "reference": reference_answer(case),
            },
        )
        statements = [
            s
            for s in data.get("statements") or []
            if isinstance(s, dict) and str(s.get("statement", "")).strip()
        ]
        if not statements:
            return skipped(
                "the judge found no statements in the reference answer", {"raw": session.last_raw}
            )
        found = sum(bool(s.get("attributed")) for s in statements)
        return scored(
            found / len(statements),
            f"{found}/{len(statements)} reference statements found in the contexts",
            {"statements": statements},
        )
