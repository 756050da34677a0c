"""A scripted stand-in for the judge client, for testing check kinds without a model.

It follows the judge protocol (`ask(rubric, variables, *, model=None)` returning an answer with
`ok`, `data`, `error`, `raw`, `calls`) and, like the real client, renders the prompt and
answers a repeated identical question from its cache without a new call: that is how the RAG
checks keep to their call budget, so the tests must be able to see it. Scripted answers are
validated against the rubric's schema, so a test cannot feed a check an answer the real
structured-output client would never return. `aask` is the same answer awaited, after
really suspending once, as the real client's `aask` does on the engine's loop.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

from jsonschema import Draft202012Validator


@dataclass
class Answer:
    ok: bool
    data: dict | None = None
    error: str | None = None
    raw: str | None = None
    calls: list = field(default_factory=list)


def failure(error="judge timed out after 3 attempts", raw="{not json"):
    """A scripted answer the client gave up on."""
    return Answer(ok=False, error=error, raw=raw)


class ScriptedJudge:
    """Answers each rubric id from its own queue of scripted answers (dicts or `Answer`s)."""

    def __init__(self, script: dict[str, list]):
        self.script = {rubric_id: list(items) for rubric_id, items in script.items()}
        self.asked: list[tuple[str, dict]] = []
        self.calls = 0
        self.prompts: list[str] = []
        self._cache: dict[tuple, Answer] = {}

    def ask(self, rubric, variables, *, model=None):
        prompt = rubric.template.format(**variables)
        self.asked.append((rubric.id, variables))
        key = (model, rubric.id, rubric.version, rubric.system, prompt)
        if key in self._cache:
            cached = self._cache[key]
            return Answer(
                cached.ok,
                cached.data,
                cached.error,
                cached.raw,
                [{"rubric": rubric.id, "cached": True}],
            )
        queue = self.script.get(rubric.id)
        assert queue, f"no scripted answer left for {rubric.id}"
        item = queue.pop(0)
        self.calls += 1
        self.prompts.append(prompt)
        if isinstance(item, Answer):
            item.calls = [{"rubric": rubric.id, "cached": False}]
            return item
        Draft202012Validator(rubric.schema).validate(item)
        answer = Answer(
            True, item, None, json.dumps(item), [{"rubric": rubric.id, "cached": False}]
        )
        self._cache[key] = answer
        return answer

    async def aask(self, rubric, variables, *, model=None):
        await asyncio.sleep(0)  # suspends, as a request on the loop does
        return self.ask(rubric, variables, model=model)
