"""What the judge is asked and what it answers: the question, reading an answer, the re-asks.

A question is a rubric's prompt under its system message, sent with the rubric's strict JSON
schema bounded for this question (`schema.py`: `maxItems` on every array, `maxLength` on
free-text strings where the server takes it), a completion cap, temperature 0 and a fixed
seed; its cache key covers the server, the model, the messages, the schema, and the agent
repetition (`cache.cache_key`). An answer is read and validated on
arrival (`read_answer`): not JSON, not valid against the schema, a refusal or cut off is a
problem, and the client re-asks once. An answer cut off at the cap is asked again fresh, with a
brevity instruction and without the cut-off text (`brevity_request`: pasting it back would
spend the context on it and leave the judge no room to answer); any other problem gets
`repair_request`, the judge's answer and what was wrong with it (evaluators.md section 8:
RAGAS' one "fix output format" re-prompt). A judge failure is never a score: `JudgeAnswer.ok`
is False with `error` and `error_code`, and `data` is None.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jsonschema.exceptions import best_match

from evaluations.judge.cache import cache_key, canonical_json, sha256
from evaluations.judge.errors import CUT_OFF, MALFORMED, REFUSED, TRANSPORT_CODES, clip
from evaluations.judge.schema import BOUND_KEYWORDS, PreparedRubric, prepare

if TYPE_CHECKING:
    from evaluations.checks.rubrics import Rubric
    from evaluations.models import JudgeCall

REPAIR_INSTRUCTION = (
    "Your previous answer could not be used: {problem}. Answer the same question again with "
    "only a JSON object that matches the required JSON schema, and no other text."
)
BREVITY_INSTRUCTION = (
    "\n\nBe brief: an earlier answer to this was cut off at the length limit. List only the "
    "items that matter{limits}, keep each reason to a few words, and close the JSON object."
)


@dataclass
class JudgeAnswer:
    """The outcome of one ask.

    `ok` with `data` (the validated answer object), or not `ok` with `error` (and
    `error_code`, one of `evaluations.judge.errors`' codes); never both. `raw` is the judge's
    last answer text as it came (kept for an error too: the evidence of what went wrong).
    `calls` are the `JudgeCall` instances of this ask, one per HTTP attempt or the one cache
    hit, saved when the recorder is the ORM one. `cached` says the answer came from the cache
    without a call; `reused` that it is a failure the same trial already had for the same
    question (no call: a failed question is not asked twice in a trial).
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
    # A failure this trial already had for the very same question, returned without asking.
    reused: bool = False

    @property
    def unavailable(self) -> bool:
        """The judge did not answer (refused, unreachable, timed out, an HTTP error), as
        against an answer that came and could not be used."""
        return not self.ok and self.error_code in TRANSPORT_CODES

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
    max_tokens: int = 0
    limits: dict = field(default_factory=dict)
    bounds: frozenset = frozenset()  # the bound keywords sent (maxItems, maxLength)


def build_question(
    rubric: Rubric,
    variables: dict,
    *,
    base_url: str,
    model: str,
    temperature: float,
    seed: int | None,
    repetition: int,
    max_tokens: int = 0,
    token_param: str = "max_tokens",
    bounds: frozenset = BOUND_KEYWORDS,
) -> Question:
    """The question `rubric` asks about `variables` (`rubric.template.format(**variables)`).

    The schema's arrays are bounded by `rubric.max_items(variables)` and its strings by
    `schema.STRING_MAX_CHARS`, sent as the keywords in `bounds` (`schema.server_bounds`); the
    integer fields named by `rubric.ranges(variables)` are enums of their range; and the
    request carries the completion cap as `token_param`:
    `max_tokens` when given (`SHERLOCK_JUDGE_MAX_TOKENS`), else the budget sized from the
    bounded schema (`schema.completion_budget`).
    """
    limits = rubric.max_items(variables) if rubric.max_items is not None else {}
    ranges = rubric.ranges(variables) if rubric.ranges is not None else None
    prepared = prepare(rubric, limits, keywords=bounds, ranges=ranges)
    cap = max_tokens or prepared.budget
    user = {"role": "user", "content": rubric.template.format(**variables)}
    messages = [{"role": "system", "content": rubric.system}, user] if rubric.system else [user]
    messages_json = canonical_json(messages)
    request = {
        "model": model,
        "messages": messages,
        "response_format": prepared.response_format,
        "temperature": temperature,
        token_param: cap,
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
        max_tokens=cap,
        limits=dict(limits),
        bounds=frozenset(bounds),
        cache_key=cache_key(
            base_url=base_url,
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


def brevity_request(question: Question) -> dict:
    """The question again, fresh, for an answer cut off at the cap: the same messages with a
    brevity instruction added to the last user message, and never the cut-off text (which
    would fill the context it ran out of). Added to the user message rather than sent as a
    message of its own, since some chat templates (Gemma's) refuse two user turns in a row."""
    limits = ", ".join(f"at most {n} in {name}" for name, n in sorted(question.limits.items()))
    *head, last = question.messages
    note = BREVITY_INSTRUCTION.format(limits=f" ({limits})" if limits else "")
    return {
        **question.request,
        "messages": [*head, {**last, "content": last["content"] + note}],
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
    if choice.get("finish_reason") == "length":
        # Before the empty check: a prompt that fills the server's context leaves no room for
        # any answer, and that is a cut-off too (raise the context, not only the cap).
        text = raw if isinstance(raw, str) else None
        return None, text, "the answer was cut off at the token limit", CUT_OFF
    if not raw or not isinstance(raw, str):
        return None, None, "the answer is empty", MALFORMED
    try:
        data = json.loads(raw)
    except ValueError as exc:
        return None, raw, f"the answer is not JSON ({exc})", MALFORMED
    if not isinstance(data, dict):
        return None, raw, "the answer is not a JSON object", MALFORMED
    error = best_match(prepared.validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "the top level"
        problem = f"the answer does not match the schema at {where}: {clip(error.message)}"
        return None, raw, problem, MALFORMED
    return data, raw, None, None
