"""What the judge is asked and what it answers: the question, reading an answer, the repair.

A question is a rubric's prompt under its system message, sent with the rubric's strict JSON
schema (`schema.py`), temperature 0 and a fixed seed; its cache key covers all of that and the
agent repetition (`cache.cache_key`). An answer is read and validated on arrival
(`read_answer`): not JSON, not valid against the schema, a refusal or cut off is a problem,
and the client re-asks once with `repair_request` (evaluators.md section 8: RAGAS' one "fix
output format" re-prompt). A judge failure is never a score: `JudgeAnswer.ok` is False with
`error` and `error_code`, and `data` is None.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jsonschema.exceptions import best_match

from evaluations.judge.cache import cache_key, canonical_json, sha256
from evaluations.judge.errors import MALFORMED, REFUSED, clip
from evaluations.judge.schema import PreparedRubric, prepare

if TYPE_CHECKING:
    from evaluations.checks.rubrics import Rubric
    from evaluations.models import JudgeCall

REPAIR_INSTRUCTION = (
    "Your previous answer could not be used: {problem}. Answer the same question again with "
    "only a JSON object that matches the required JSON schema, and no other text."
)


@dataclass
class JudgeAnswer:
    """The outcome of one ask.

    `ok` with `data` (the validated answer object), or not `ok` with `error` (and
    `error_code`, one of `evaluations.judge.errors`' codes); never both. `raw` is the judge's
    last answer text as it came (kept for an error too: the evidence of what went wrong).
    `calls` are the `JudgeCall` instances of this ask, one per HTTP attempt or the one cache
    hit, saved when the recorder is the ORM one. `cached` says the answer came from the cache
    without a call.
    """

    ok: bool
    data: dict | None = None
    error: str | None = None
    raw: str | None = None
    calls: list[JudgeCall] = field(default_factory=list)
    cached: bool = False
    error_code: str | None = None
    model: str = ""
    cache_key: str = ""

    @property
    def call_ids(self) -> list[int]:
        """The stored calls' ids, for `CheckResult` evidence."""
        return [call.pk for call in self.calls if call.pk is not None]

    @property
    def http_calls(self) -> int:
        """How many requests this ask sent (0 for a cache hit)."""
        return sum(1 for call in self.calls if not call.cached)

    @property
    def prompt_tokens(self) -> int:
        return sum(call.prompt_tokens for call in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(call.completion_tokens for call in self.calls)


@dataclass(frozen=True)
class Question:
    """One question to the judge: the request as sent, and what its calls are filed under."""

    rubric_id: str
    rubric_version: int
    prepared: PreparedRubric
    model: str
    messages: list[dict]
    request: dict
    prompt_hash: str
    cache_key: str


def build_question(
    rubric: Rubric,
    variables: dict,
    *,
    model: str,
    temperature: float,
    seed: int | None,
    repetition: int,
) -> Question:
    """The question `rubric` asks about `variables` (`rubric.template.format(**variables)`)."""
    prepared = prepare(rubric)
    user = {"role": "user", "content": rubric.template.format(**variables)}
    messages = [{"role": "system", "content": rubric.system}, user] if rubric.system else [user]
    messages_json = canonical_json(messages)
    request = {
        "model": model,
        "messages": messages,
        "response_format": prepared.response_format,
        "temperature": temperature,
    }
    if seed is not None:
        request["seed"] = seed
    return Question(
        rubric_id=rubric.id,
        rubric_version=rubric.version,
        prepared=prepared,
        model=model,
        messages=messages,
        request=request,
        prompt_hash=sha256(messages_json),
        cache_key=cache_key(
            model=model,
            messages_json=messages_json,
            schema_hash=prepared.schema_hash,
            temperature=temperature,
            seed=seed,
            repetition=repetition,
        ),
    )


def repair_request(question: Question, raw: str | None, problem: str) -> dict:
    """The question again, after the judge's own answer and what was wrong with it."""
    return {
        **question.request,
        "messages": [
            *question.messages,
            {"role": "assistant", "content": raw or ""},
            {"role": "user", "content": REPAIR_INSTRUCTION.format(problem=problem)},
        ],
    }


def read_answer(payload: dict, prepared: PreparedRubric):
    """(data, raw, problem, error code) of a chat completion; `problem` is None when usable."""
    try:
        choice = payload["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        return None, None, "the response has no message", MALFORMED
    refusal = message.get("refusal")
    if refusal:
        return None, refusal, f"the judge refused: {clip(refusal)}", REFUSED
    raw = message.get("content")
    if not raw or not isinstance(raw, str):
        return None, None, "the answer is empty", MALFORMED
    if choice.get("finish_reason") == "length":
        return None, raw, "the answer was cut off at the token limit", MALFORMED
    try:
        data = json.loads(raw)
    except ValueError as exc:
        return None, raw, f"the answer is not JSON ({exc})", MALFORMED
    if not isinstance(data, dict):
        return None, raw, "the answer is not a JSON object", MALFORMED
    quick_check = prepared.quick_check
    if quick_check is not None and quick_check(data):
        return data, raw, None, None
    error = best_match(prepared.validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "the top level"
        problem = f"the answer does not match the schema at {where}: {clip(error.message)}"
        return None, raw, problem, MALFORMED
    return data, raw, None, None
