"""A rubric's answer schema, prepared once: the strict response_format, its hash, a validator.

Every answer is a structured output against the rubric's strict JSON schema (DESIGN section 8).
What that costs to use is paid once per rubric schema (`prepare`): the `response_format` sent
with each question, the schema hash that goes into cache keys (`cache.cache_key`), a compiled
`jsonschema` validator, and a plain-Python check (`quick_check`) that accepts the common valid
answer without running jsonschema. `answers.read_answer` uses both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jsonschema import validators

from evaluations.judge.cache import canonical_json, sha256

if TYPE_CHECKING:
    from evaluations.checks.rubrics import Rubric


@dataclass(frozen=True)
class PreparedRubric:
    """What a rubric's schema costs to use, paid once: the response_format, the schema hash
    that goes into cache keys, and a compiled validator."""

    schema: dict  # held so that the id() it is filed under stays unique while it lives
    response_format: dict
    schema_hash: str
    validator: Any
    # A plain-Python check for the schemas rubrics use; True only when the answer is valid
    # for certain (otherwise the jsonschema validator decides, and words the problem).
    quick_check: Any = None
    # What a stored JudgeCall keeps of the response_format: the schema by its hash. The schema
    # itself is the rubric's (id and version are on the row), the same in every call; storing
    # it again in each row would cost space and the CPU to encode it, per call.
    stored_response_format: dict | None = None


def stored_request(request: dict, prepared: PreparedRubric) -> dict:
    """The request as a `JudgeCall` row stores it: the schema by its hash."""
    if request.get("response_format") is not prepared.response_format:
        return request
    return {**request, "response_format": prepared.stored_response_format}


_prepared: dict[tuple[int, str], PreparedRubric] = {}
_PREPARED_MAX = 1024
_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def prepare(rubric: Rubric) -> PreparedRubric:
    """The rubric's prepared schema, built on first use and kept (by the schema object)."""
    schema = rubric.schema
    key = (id(schema), rubric.id)
    prepared = _prepared.get(key)
    if prepared is not None and prepared.schema is schema:
        return prepared
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
        quick_check=quick_check(schema),
        stored_response_format={
            "type": "json_schema",
            "json_schema": {"name": name, "schema": {"sha256": schema_hash}, "strict": True},
        },
    )
    if len(_prepared) >= _PREPARED_MAX:  # rubrics built on the fly must not grow this forever
        _prepared.clear()
    _prepared[key] = prepared
    return prepared


# Schema keywords that say nothing about validity (annotations).
_ANNOTATIONS = frozenset({"title", "description", "$comment", "default", "examples"})
_QUICK_TYPES = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    # Integral floats (1.0) are integers to jsonschema: left to it.
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def quick_check(schema):
    """A predicate that is True only for instances valid against `schema`, for the keywords
    rubric schemas use (type, properties, required, additionalProperties: false, items, enum
    of scalars); None for a schema using anything else. False means "ask jsonschema", which
    decides (and words the problem), so the predicate may be stricter, never looser."""
    if not isinstance(schema, dict):
        return None
    if (
        set(schema)
        - _ANNOTATIONS
        - {
            "type",
            "properties",
            "required",
            "additionalProperties",
            "items",
            "enum",
        }
    ):
        return None
    tests = []
    kind = schema.get("type")
    if kind is not None:
        if not isinstance(kind, str) or kind not in _QUICK_TYPES:
            return None
        tests.append(_QUICK_TYPES[kind])
    if "enum" in schema:
        enum = schema["enum"]
        if not isinstance(enum, list) or not all(
            value is None or isinstance(value, (str, int, float, bool)) for value in enum
        ):
            return None
        allowed = [(type(value), value) for value in enum]
        tests.append(lambda v: (type(v), v) in allowed)
    if "properties" in schema or "required" in schema or "additionalProperties" in schema:
        if kind != "object":
            return None
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        closed = schema.get("additionalProperties", True)
        if (
            not isinstance(properties, dict)
            or not isinstance(required, list)
            or closed not in (True, False)
        ):
            return None
        checks = {}
        for name, subschema in properties.items():
            check = quick_check(subschema)
            if check is None:
                return None
            checks[name] = check
        required = tuple(required)
        items = tuple(checks.items())

        def object_test(v):
            if closed is False and any(name not in checks for name in v):
                return False
            if any(name not in v for name in required):
                return False
            return all(check(v[name]) for name, check in items if name in v)

        tests.append(object_test)
    if "items" in schema:
        if kind != "array":
            return None
        item_check = quick_check(schema["items"])
        if item_check is None:
            return None
        tests.append(lambda v: all(item_check(item) for item in v))
    tests = tuple(tests)
    return lambda v: all(test(v) for test in tests)
