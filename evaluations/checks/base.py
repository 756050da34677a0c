"""The contract every check kind follows, and the small helpers they share.

A check kind is a pure function from (params, case, transcript, judge) to a `CheckVerdict`: it
computes a score in [0, 1], or says why it could not (`skipped` when an input is missing, `error`
when something broke). Thresholds, modes and repetitions belong to the run engine, which reads
only the verdict. Keeping kinds free of Django and of the judge client means they are tested as
plain functions and that the engine, the `score_check` command and the judge package can all
import them without cycles.
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sherlock.core.aio import run_unsuspended

SCORED = "scored"
SKIPPED = "skipped"
ERROR = "error"

GROUPS = ("behavioural", "structured", "heuristic", "data_task", "custom")

# The five groups of the seeds as people read them (docs/checks.md "The kinds", the admin's
# kind select): one title per entry of GROUPS, in the same order.
GROUP_TITLES = {
    "behavioural": "Behavioural (no model)",
    "structured": "Structured (RAG)",
    "heuristic": "Heuristic (model judges: quality)",
    "data_task": "Data task (tables and charts)",
    "custom": "Custom (model, your own criterion)",
}

REGISTRY: dict[str, type[CheckKind]] = {}


class UnknownCheckKind(ValueError):
    """Raised for a kind name that no check kind registered (a typo, or a removed kind)."""


class ParamsError(ValueError):
    """Params that do not fit a kind's schema; `field` is a path such as `tools[0].name`.

    The field travels separately from the message so that forms and the API can attach the
    message to the right input, and `score_check` can name it on stderr.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


@dataclass
class CheckVerdict:
    """What one check concluded about one trial; the engine turns it into a CheckResult.

    `score` is set exactly when `outcome` is "scored". `evidence` holds what the verdict rests on
    (claims and their verdicts, quoted spans, diffs) so a person can audit it, and `judge_calls`
    is whatever the judge reported per call, passed through untouched for the cost ledger.
    """

    score: float | None
    outcome: str
    reason: str
    evidence: dict = field(default_factory=dict)
    judge_calls: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "score": self.score,
            "outcome": self.outcome,
            "reason": self.reason,
            "evidence": self.evidence,
            "judge_calls": self.judge_calls,
        }


def scored(score: float, reason: str, evidence: dict | None = None) -> CheckVerdict:
    # Clamp: float arithmetic may leave 1.0000000000000002, and the engine compares >= threshold.
    return CheckVerdict(min(1.0, max(0.0, float(score))), SCORED, reason, evidence or {})


def skipped(reason: str, evidence: dict | None = None) -> CheckVerdict:
    return CheckVerdict(None, SKIPPED, reason, evidence or {})


def errored(reason: str, evidence: dict | None = None) -> CheckVerdict:
    return CheckVerdict(None, ERROR, reason, evidence or {})


def binary(ok: bool, reason: str, evidence: dict | None = None) -> CheckVerdict:
    return scored(1.0 if ok else 0.0, reason, evidence)


class CheckKind:
    """Base class of a check kind: metadata the UI and engine read, plus `evaluate`.

    Subclasses declare their params as a JSON Schema (draft 2020-12) with defaults, and put rules
    a schema cannot say well (a schema that must itself be valid, `zero_ms > max_ms`) in `clean`,
    which raises `ParamsError`. `needs` names the inputs the kind reads, using the vocabulary of
    docs/checks.md, so the UI can warn when a dataset lacks them.
    """

    kind: ClassVar[str] = ""
    group: ClassVar[str] = ""
    uses_model: ClassVar[bool] = False
    offline: ClassVar[bool] = False
    needs: ClassVar[tuple[str, ...]] = ()
    params_schema: ClassVar[dict] = {"type": "object", "additionalProperties": False}
    description: ClassVar[str] = ""

    def clean(self, params: dict) -> dict:
        return params

    def evaluate(self, params: dict, case: dict, transcript: dict, judge) -> CheckVerdict:
        raise NotImplementedError


def register(cls: type[CheckKind]) -> type[CheckKind]:
    assert cls.kind and cls.kind not in REGISTRY, cls.kind
    assert cls.group in GROUPS, cls.group
    REGISTRY[cls.kind] = cls
    return cls


def params_object(properties: dict, required: tuple = (), **extra) -> dict:
    """A params schema: a closed object, so a misspelt param is an error, not silently ignored."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
    }
    if required:
        schema["required"] = list(required)
    schema.update(extra)
    return schema


def needed_when(key: str, field: str, value: Any) -> dict:
    """A params-schema clause: `key` is required when `field` is `value` (pair it with
    `only_when` in `clean`, so the key is refused otherwise)."""
    # `required` in the `if`: without it an absent `field` satisfies the condition, and a
    # params object missing `field` was told that `key` is required instead.
    return {
        "if": {"properties": {field: {"const": value}}, "required": [field]},
        "then": {"required": [key]},
    }


def only_when(params: dict, key: str, field: str, value: Any) -> None:
    """Refuse `key` in params unless `field` is `value` (a param that would be ignored)."""
    if key in params and params[field] != value:
        raise ParamsError(key, f"is only used with {field} {value}")


# --- reading cases and transcripts ---------------------------------------------------------------


def has_output(transcript: dict) -> bool:
    return transcript.get("output") is not None


def as_text(value: Any) -> str:
    """The text a judge sees for a value; custom checks verify quotes against this same text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def question_text(case: dict) -> str | None:
    value = case.get("input")
    if value is None or value == "":
        return None
    return as_text(value)


def expected(case: dict, key: str):
    return (case.get("expected") or {}).get(key)


def numbered(items: list[str]) -> str:
    """`[1] first\n[2] second`: judges answer by number, which we map back to the items."""
    return "\n".join(f"[{i}] {item}" for i, item in enumerate(items, start=1))


def embedded_json_values(text: str) -> list:
    """Every JSON object or array embedded in prose, in order (promptfoo `contains-json`)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    pos = 0
    while True:
        match = re.compile(r"[\[{]").search(text, pos)
        if not match:
            return found
        try:
            value, end = decoder.raw_decode(text, match.start())
        except ValueError:
            pos = match.start() + 1
            continue
        found.append(value)
        pos = end


def finite_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def maximum_matching(left: list, right: list, compatible) -> list[tuple[int, int]]:
    """Largest set of (i, j) pairs with compatible(left[i], right[j]), each item used once.

    Greedy pairing is wrong as soon as one item fits several partners (expected `search` and
    `search(q=a)` against calls `search(q=a)`, `search(q=b)`), so this finds augmenting paths
    (Kuhn's algorithm, breadth-first so that long tables do not hit the recursion limit).
    """
    adjacency = [[j for j, r in enumerate(right) if compatible(item, r)] for item in left]
    match_left, match_right = [-1] * len(left), [-1] * len(right)
    for start in range(len(left)):
        parent: dict[int, int] = {}
        queue, free = deque([start]), -1
        while queue and free < 0:
            i = queue.popleft()
            for j in adjacency[i]:
                if j in parent:
                    continue
                parent[j] = i
                if match_right[j] < 0:
                    free = j
                    break
                queue.append(match_right[j])
        while free >= 0:  # flip the alternating path ending at the free right item
            i = parent[free]
            previous = match_left[i]
            match_left[i], match_right[free] = free, i
            free = previous
    return [(i, j) for i, j in enumerate(match_left) if j >= 0]


# --- model checks --------------------------------------------------------------------------------


class JudgeFailed(Exception):
    """The judge could not give a usable answer: the check is `error`, never a score.

    Raised both when the client reports failure (`answer.ok` false after its retries) and when a
    schema-valid answer is still unusable (a verdict count that does not match the contexts, a
    score outside the scale): evaluators.md §8, a broken judge is an error, not a fail.
    """

    def __init__(self, reason: str, raw=None, **evidence):
        super().__init__(reason)
        self.reason = reason
        self.evidence = {"raw": raw, **evidence}


class JudgeSession:
    """Asks the judge on behalf of one check and keeps every call it reports, for the ledger.

    `ask` is a coroutine, so each model check's judging is written once: on the engine's loop
    (`on_loop=True`) it awaits the judge's `aask`, and the judging of many trials overlaps
    there; otherwise it calls the judge's blocking `ask` and never suspends, and
    `ModelCheck.evaluate` runs the judging to its end without a loop.
    """

    def __init__(self, judge, *, on_loop: bool = False):
        self.judge = judge
        self.on_loop = on_loop
        self.calls: list = []
        self.last_raw = None

    async def ask(self, rubric, variables: dict) -> dict:
        if self.on_loop:
            answer = await self.judge.aask(rubric, variables)
        else:
            answer = self.judge.ask(rubric, variables)
        self.calls.extend(getattr(answer, "calls", None) or [])
        self.last_raw = answer.raw
        if not answer.ok:
            if getattr(answer, "unavailable", False):
                # Named as a case state names it (`evaluations.checks.scoring.JUDGE_UNAVAILABLE`),
                # with the cause; the verdict names the judge.
                raise JudgeFailed(f"judge unavailable: {answer.error}", answer.raw)
            raise JudgeFailed(answer.error or "judge failed", answer.raw)
        if not isinstance(answer.data, dict):
            raise JudgeFailed("judge answer is not an object", answer.raw)
        return answer.data

    def unusable(self, reason: str, **evidence) -> JudgeFailed:
        """A schema-valid answer that still cannot be scored, with the raw text for audit."""
        return JudgeFailed(f"unusable judge answer: {reason}", self.last_raw, **evidence)


class ModelCheck(CheckKind):
    """A check scored by the judge: checks its inputs, then asks, then scores the answer.

    Inputs are checked before the judge is, so a case without contexts says so even on an
    installation without a judge. Subclasses implement `missing_input` (a reason, or None),
    optionally `without_judge` (a verdict that needs no judge: an empty answer scores 0) and
    `async judge_case`, which awaits `session.ask(...)` and raises `JudgeFailed` for unusable
    answers; this class turns those into `error` verdicts carrying the raw answer, and attaches
    the calls to every verdict it returns. `evaluate` asks through the judge's blocking `ask`;
    `aevaluate`, awaited on the run engine's loop, through its `aask`.
    """

    uses_model = True

    def missing_input(self, params: dict, case: dict, transcript: dict) -> str | None:
        return None if has_output(transcript) else "no output to judge"

    def without_judge(self, params: dict, case: dict, transcript: dict) -> CheckVerdict | None:
        """A verdict that holds whatever a judge would say (checked before anything else)."""
        return None

    async def judge_case(self, params, case, transcript, session: JudgeSession) -> CheckVerdict:
        raise NotImplementedError

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        return run_unsuspended(self._judged(params, case, transcript, judge, on_loop=False))

    async def aevaluate(self, params, case, transcript, judge) -> CheckVerdict:
        """`evaluate` on an event loop: the judge's questions are awaited (`judge.aask`)."""
        return await self._judged(params, case, transcript, judge, on_loop=True)

    async def _judged(self, params, case, transcript, judge, *, on_loop: bool) -> CheckVerdict:
        verdict = self.without_judge(params, case, transcript)
        if verdict is not None:
            return verdict
        reason = self.missing_input(params, case, transcript)
        if reason:
            return skipped(reason)
        if judge is None:
            return skipped("no judge configured")
        session = JudgeSession(judge, on_loop=on_loop)
        try:
            verdict = await self.judge_case(params, case, transcript, session)
        except JudgeFailed as failure:
            verdict = errored(failure.reason, failure.evidence)
        verdict.judge_calls = session.calls
        return verdict
