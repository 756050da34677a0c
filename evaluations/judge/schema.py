"""A rubric's answer schema, prepared once: the bounds, the strict response_format, its hash,
a validator, and the completion budget.

Every answer is a structured output against the rubric's strict JSON schema.
What that costs to use is paid once per rubric schema and bounds (`prepare`): the `response_format`
sent with each question, the schema hash that goes into cache keys (`cache.cache_key`), a compiled
`jsonschema` validator, which `answers.read_answer` uses. (A plain-Python pre-check of the common
valid answer was measured and removed: 0.03 to 0.07 ms of 1.23 ms of CPU per question in
`bench/judge_in_flight.py` with a real rubric's schema, under 1 % of a trial's engine time.)

Bounded answers: every array of the schema sent gets a `maxItems`, the rubric's bound
for this question (`Rubric.max_items`) or `DEFAULT_MAX_ITEMS` for an array it does not name,
and every free-text string a `maxLength` of `STRING_MAX_CHARS` (`bound_schema`), so that a
small model's grammar-constrained answer ends even when the model loops inside a list or a
reason. Which keywords are sent depends on the server (`server_bounds`): OpenAI's strict mode
refuses `maxLength`, so its hosts get `maxItems` only; `SHERLOCK_JUDGE_SCHEMA_BOUNDS=false`
sends none, and a server that refuses one (a 400 naming it) is sent the question again without
it (`client.py`). The completion cap a question is sent with, unless `SHERLOCK_JUDGE_MAX_TOKENS`
fixes one, is sized from the bounded schema (`completion_budget`): each array's bound x its
item's budget, plus the object's own fields and an overhead; it is sized from the bounds even
when they are not sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jsonschema import validators

from evaluations.judge.cache import canonical_json, sha256
from evaluations.judge.sdk import is_openai_host

if TYPE_CHECKING:
    from evaluations.checks.rubrics import Rubric


# The ceiling of an array a rubric gives no bound for (rubrics outside the library, nested ones).
DEFAULT_MAX_ITEMS = 50
# The longest free-text string (a reason, a claim, a quote): a short sentence is under half that.
STRING_MAX_CHARS = 200
MAX_ITEMS, MAX_LENGTH = "maxItems", "maxLength"
BOUND_KEYWORDS = frozenset({MAX_ITEMS, MAX_LENGTH})


def server_bounds(base_url: str, enabled: bool = True) -> frozenset:
    """The bound keywords to send to this server (`SHERLOCK_JUDGE_SCHEMA_BOUNDS`): none when
    off; `maxItems` only to OpenAI and Azure OpenAI, whose strict structured outputs refuse
    `maxLength`; both to any other server (llama.cpp, vLLM and Ollama enforce them)."""
    if not enabled:
        return frozenset()
    return frozenset({MAX_ITEMS}) if is_openai_host(base_url) else BOUND_KEYWORDS


# The completion budget, in tokens: a string field (one short sentence, or a claim: up to
# STRING_MAX_CHARS at about 4 characters a token), a scalar (number, boolean, enum), an object's
# braces and each key, the whole answer's overhead, and a floor for the smallest answers (a
# grade and its reason).
STRING_TOKENS = 50
SCALAR_TOKENS = 8
FIELD_TOKENS = 4
OBJECT_TOKENS = 8
ANSWER_OVERHEAD_TOKENS = 64
MIN_COMPLETION_TOKENS = 256


def bound_schema(
    schema: dict, limits: dict[str, int] | None, keywords: frozenset = BOUND_KEYWORDS
) -> dict:
    """`schema` with the bounds named in `keywords`: `maxItems` on every array (a top-level
    property named in `limits` gets its limit, at least 1; any other array `DEFAULT_MAX_ITEMS`)
    and `maxLength` `STRING_MAX_CHARS` on every string that is not an enum. A bound the schema
    already has is kept when it is tighter. The schema itself (same object) when nothing is
    added."""
    limits = limits or {}
    if not keywords or not _has_bounded(schema, keywords):
        return schema

    def walk(node, name=None, top=False):
        if not isinstance(node, dict):
            return node
        out = dict(node)
        if MAX_LENGTH in keywords and node.get("type") == "string" and "enum" not in node:
            most = node.get("maxLength")
            out["maxLength"] = (
                min(most, STRING_MAX_CHARS) if isinstance(most, int) else STRING_MAX_CHARS
            )
        if node.get("type") == "array" and MAX_ITEMS in keywords:
            limit = limits.get(name) if top else None
            limit = max(1, int(limit)) if limit is not None else DEFAULT_MAX_ITEMS
            if isinstance(node.get("maxItems"), int):
                limit = min(limit, node["maxItems"])
            out["maxItems"] = limit
        if "items" in node:
            out["items"] = walk(node["items"])
        if isinstance(node.get("properties"), dict):
            top_level = node is schema
            out["properties"] = {
                key: walk(child, key, top_level) for key, child in node["properties"].items()
            }
        return out

    return walk(schema)


def _has_bounded(node, keywords) -> bool:
    """Does the schema hold a node one of `keywords` bounds (an array, a free-text string)?"""
    if not isinstance(node, dict):
        return False
    if MAX_ITEMS in keywords and node.get("type") == "array":
        return True
    if MAX_LENGTH in keywords and node.get("type") == "string" and "enum" not in node:
        return True
    children = list((node.get("properties") or {}).values())
    return any(_has_bounded(child, keywords) for child in children) or _has_bounded(
        node.get("items"), keywords
    )


def completion_budget(schema: dict) -> int:
    """The completion cap sized from a bounded schema (`bound_schema`): an array costs its
    `maxItems` x its item's budget, an object its braces plus each field's key and value, a
    string `STRING_TOKENS`, anything else `SCALAR_TOKENS`; plus `ANSWER_OVERHEAD_TOKENS`, and
    never below `MIN_COMPLETION_TOKENS`. E.g. `rag.claims` for a 20-word answer: 13 claims x
    (8 + 3 x 4 + 50 + 50 + 8) = 1,664, + the reason, the flag and braces (78), + 64: 1,806
    tokens."""

    def cost(node) -> int:
        if not isinstance(node, dict):
            return SCALAR_TOKENS
        kind = node.get("type")
        if kind == "array":
            return node.get("maxItems", DEFAULT_MAX_ITEMS) * cost(node.get("items") or {})
        if kind == "object" or "properties" in node:
            fields = (node.get("properties") or {}).values()
            return OBJECT_TOKENS + sum(FIELD_TOKENS + cost(child) for child in fields)
        if kind == "string" and "enum" not in node:
            return STRING_TOKENS
        return SCALAR_TOKENS

    return max(MIN_COMPLETION_TOKENS, cost(schema) + ANSWER_OVERHEAD_TOKENS)


@dataclass(frozen=True)
class PreparedRubric:
    """What a rubric's schema costs to use, paid once per bounds: the response_format, the
    schema hash that goes into cache keys, a compiled validator, and the completion budget."""

    schema: dict  # held so that the id() it is filed under stays unique while it lives
    response_format: dict
    schema_hash: str
    validator: Any
    # What a stored JudgeCall keeps of the response_format: the schema by its hash. The schema
    # itself is the rubric's (id and version are on the row), the same in every call; storing
    # it again in each row would cost space and the CPU to encode it, per call.
    stored_response_format: dict | None = None
    # The completion cap sized from the bounded schema (`completion_budget`).
    budget: int = MIN_COMPLETION_TOKENS
    # The rubric's own schema, held so that the id() this is filed under stays unique.
    source: dict | None = None


def stored_request(request: dict, prepared: PreparedRubric) -> dict:
    """The request as a `JudgeCall` row stores it: the schema by its hash."""
    if request.get("response_format") is not prepared.response_format:
        return request
    return {**request, "response_format": prepared.stored_response_format}


_prepared: dict[tuple, PreparedRubric] = {}
_PREPARED_MAX = 1024
_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def with_ranges(schema: dict, ranges: dict[str, tuple[int, int]] | None) -> dict:
    """`schema` with each integer property named in `ranges` (at any depth) an enum of its
    range (low..high), so that a grade or an item number cannot leave the question's range
    (a small model writes 1000000000000000)."""
    if not ranges:
        return schema

    def walk(node, name=None):
        if not isinstance(node, dict):
            return node
        out = dict(node)
        if node.get("type") == "integer" and name in ranges:
            low, high = ranges[name]
            out["enum"] = list(range(int(low), int(high) + 1))
        if "items" in node:
            out["items"] = walk(node["items"])
        if isinstance(node.get("properties"), dict):
            out["properties"] = {key: walk(child, key) for key, child in node["properties"].items()}
        return out

    return walk(schema)


def prepare(
    rubric: Rubric,
    limits: dict[str, int] | None = None,
    *,
    keywords: frozenset = BOUND_KEYWORDS,
    ranges: dict[str, tuple[int, int]] | None = None,
) -> PreparedRubric:
    """The rubric's prepared schema for these array bounds and bound keywords (`maxItems`,
    `maxLength`; `server_bounds`), built on first use and kept (by the rubric's schema object,
    the bounds and the keywords). The budget is sized from the array bounds whether or not
    `maxItems` is sent. `ranges` make integer fields enums of their range (`with_ranges`),
    always: an integer enum is plain structured output that every server takes."""
    source = rubric.schema
    bounds = tuple(sorted((limits or {}).items()))
    keywords = frozenset(keywords)
    spans = tuple(sorted((name, (span[0], span[1])) for name, span in (ranges or {}).items()))
    key = (id(source), rubric.id, bounds, keywords, spans)
    prepared = _prepared.get(key)
    if prepared is not None and prepared.source is source:
        return prepared
    schema = with_ranges(bound_schema(source, dict(bounds), keywords), dict(spans))
    sized = bound_schema(source, dict(bounds), frozenset({MAX_ITEMS}))
    # An invalid schema is a bug in the rubric, not a judge failure: let SchemaError raise.
    validator_class = validators.validator_for(schema)
    validator_class.check_schema(schema)
    name = _SCHEMA_NAME.sub("_", rubric.id)[:64] or "answer"
    schema_hash = sha256(canonical_json(schema))
    prepared = PreparedRubric(
        schema=schema,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": True},
        },
        schema_hash=schema_hash,
        validator=validator_class(schema),
        stored_response_format={
            "type": "json_schema",
            "json_schema": {"name": name, "schema": {"sha256": schema_hash}, "strict": True},
        },
        budget=completion_budget(sized),
        source=source,
    )
    if len(_prepared) >= _PREPARED_MAX:  # rubrics built on the fly must not grow this forever
        _prepared.clear()
    _prepared[key] = prepared
    return prepared
