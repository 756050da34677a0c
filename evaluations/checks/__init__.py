"""Sherlock's check (evaluator) kinds: a pure-Python scoring library with one entry point.

Each kind scores one trial of one case and returns a `CheckVerdict`; the run engine applies
thresholds, modes and repetitions to it. The library imports neither Django nor
the judge client, so models, the engine, the API and the judge package can all depend on it.
Formats of the case and transcript a check reads are in docs/checks.md.

    from evaluations.checks import REGISTRY, evaluate, validate_params
    params = validate_params("latency", {"max_ms": 2000})   # raises ParamsError(field, message)
    verdict = evaluate("latency", params, case, transcript)  # never raises
    verdict = await aevaluate(kind, params, case, transcript, judge)  # on a loop: judge.aask
"""

from __future__ import annotations

import copy
import json
import traceback

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from . import behavioural, custom, data_task, heuristic, rag, rag_overlap  # noqa: F401 (they register)
from .base import (
    ERROR,
    GROUP_TITLES,
    GROUPS,
    REGISTRY,
    SCORED,
    SKIPPED,
    CheckKind,
    CheckVerdict,
    ModelCheck,
    ParamsError,
    UnknownCheckKind,
    errored,
)
from .rubrics import RUBRICS, Rubric

# List kinds cheap and certain first, whatever the import order.
_ordered = sorted(REGISTRY.items(), key=lambda item: GROUPS.index(item[1].group))
REGISTRY.clear()
REGISTRY.update(_ordered)
# The kinds a model judges: their errors are the judge's (a case state's "judge unavailable").
MODEL_KINDS = sorted(kind for kind, cls in REGISTRY.items() if issubclass(cls, ModelCheck))

__all__ = [
    "ERROR",
    "MODEL_KINDS",
    "GROUPS",
    "GROUP_TITLES",
    "REGISTRY",
    "RUBRICS",
    "SCORED",
    "SKIPPED",
    "CheckKind",
    "CheckVerdict",
    "ParamsError",
    "Rubric",
    "UnknownCheckKind",
    "aevaluate",
    "describe_params",
    "evaluate",
    "get_kind",
    "kinds_by_group",
    "validate_params",
]


def get_kind(kind: str) -> type[CheckKind]:
    try:
        return REGISTRY[kind]
    except (KeyError, TypeError):
        raise UnknownCheckKind(f"unknown check kind: {kind!r}") from None


def kinds_by_group() -> list[tuple[str, list[type[CheckKind]]]]:
    """The registry's kinds under their group titles, in GROUPS order (the admin's select)."""
    return [
        (GROUP_TITLES[group], [cls for cls in REGISTRY.values() if cls.group == group])
        for group in GROUPS
    ]


def describe_params(kind: str) -> list[dict]:
    """One row per param of `kind`, read from its params schema: `name`, `type` (in words:
    "one of a, b", "list of string"), `required`, `default` (JSON text, "" when none) and
    `meaning` (the schema's description). What the admin shows beside the params field."""
    schema = get_kind(kind).params_schema
    required = set(schema.get("required", ()))
    rows = []
    for name, spec in schema.get("properties", {}).items():
        rows.append(
            {
                "name": name,
                "type": _type_words(spec),
                "required": name in required,
                "default": json.dumps(spec["default"]) if "default" in spec else "",
                "meaning": spec.get("description", ""),
            }
        )
    return rows


def _type_words(spec: dict) -> str:
    if "enum" in spec:
        return "one of " + ", ".join(json.dumps(v) for v in spec["enum"])
    if "const" in spec:
        return json.dumps(spec["const"])
    for key in ("oneOf", "anyOf"):
        if key in spec:
            return " or ".join(_type_words(branch) for branch in spec[key])
    kind = spec.get("type", "any")
    if kind == "array" and isinstance(spec.get("items"), dict):
        return f"list of ({_type_words(spec['items'])})"
    if kind == "object" and spec.get("properties"):
        return "object {" + ", ".join(spec["properties"]) + "}"
    if kind == "object" and isinstance(spec.get("additionalProperties"), dict):
        return f"object of ({_type_words(spec['additionalProperties'])})"
    return {"number": "number", "integer": "integer", "boolean": "true/false"}.get(kind, kind)


def validate_params(kind: str, params: dict | None) -> dict:
    """Params checked against the kind's schema, with defaults filled in; raises ParamsError."""
    cls = get_kind(kind)
    params = {} if params is None else params
    if not isinstance(params, dict):
        raise ParamsError("params", "must be an object")
    errors = list(_params_validator(cls).iter_errors(params))
    if errors:
        # A misspelt or unknown param explains the other errors it causes (a missing required
        # field, a conditional that no longer applies): name it first.
        unknown = [e for e in errors if e.validator == "additionalProperties"]
        raise _params_error(best_match(unknown or errors))
    normalized = copy.deepcopy(params)
    for name, spec in cls.params_schema.get("properties", {}).items():
        if name not in normalized and "default" in spec:
            normalized[name] = copy.deepcopy(spec["default"])
    return cls().clean(normalized)


def _kind_and_params(kind: str, params: dict | None):
    """(the kind's class, its validated params), or (None, the `error` verdict of a check whose
    kind is unknown or whose params are invalid)."""
    try:
        return get_kind(kind), _validated(kind, params)
    except (UnknownCheckKind, ParamsError) as exc:
        return None, errored(f"invalid check: {exc}")


def evaluate(kind: str, params: dict | None, case: dict, transcript: dict, judge=None):
    """Score one trial. Never raises: bad params or a bug in a kind become an `error` verdict.

    A trial has many checks; one broken check must not lose the others, and an `error` never
    counts as a pass (fail closed), so turning exceptions into verdicts is safe.
    A model kind asks through the judge's blocking `ask`.
    """
    cls, normalized = _kind_and_params(kind, params)
    if cls is None:
        return normalized  # the `error` verdict of an invalid check
    try:
        return cls().evaluate(normalized, case or {}, transcript or {}, judge)
    except Exception as exc:
        return _crashed(kind, exc)


async def aevaluate(kind: str, params: dict | None, case: dict, transcript: dict, judge=None):
    """`evaluate` on an event loop (the run engine's shard): a model kind awaits its judge's
    questions (`judge.aask`), so the judging of many trials overlaps on one loop without a
    thread each; any other kind is plain computation on the transcript and runs right here
    (15 to 30 us of CPU for `output_type` or `latency`; a hop to the engine's pool and back
    costs 80 to 100).
    The same verdicts, and the same errors for bad params or a bug in a kind.
    """
    cls, normalized = _kind_and_params(kind, params)
    if cls is None:
        return normalized
    try:
        if issubclass(cls, ModelCheck):
            return await cls().aevaluate(normalized, case or {}, transcript or {}, judge)
        return cls().evaluate(normalized, case or {}, transcript or {}, judge)
    except Exception as exc:
        return _crashed(kind, exc)


def _crashed(kind: str, exc: Exception):
    return errored(
        f"check {kind} failed: {type(exc).__name__}: {exc}",
        {"traceback": traceback.format_exc(limit=5)},
    )


_normalized: dict[tuple[str, str], dict] = {}
_NORMALIZED_MAX = 1024


def _validated(kind: str, params) -> dict:
    """`validate_params`, remembered: the engine scores the same few check configurations on
    every trial. The normalized params it returns are shared, and checks only read them."""
    try:
        key = (kind, json.dumps(params, sort_keys=True, separators=(",", ":")))
    except (TypeError, ValueError):  # not JSON: validation words the problem
        return validate_params(kind, params)
    normalized = _normalized.get(key)
    if normalized is None:
        normalized = validate_params(kind, params)
        if len(_normalized) >= _NORMALIZED_MAX:
            _normalized.clear()
        _normalized[key] = normalized
    return normalized


_validators: dict[type, Draft202012Validator] = {}


def _params_validator(cls: type[CheckKind]) -> Draft202012Validator:
    # Built once per kind: params are validated on every trial the engine scores.
    validator = _validators.get(cls)
    if validator is None or validator.schema is not cls.params_schema:
        validator = _validators[cls] = Draft202012Validator(cls.params_schema)
    return validator


def _params_error(error) -> ParamsError:
    # A oneOf/anyOf failure reports every branch; the useful one is the branch whose type fits
    # the value (an object missing `name`, not "is not a string").
    while error.validator in ("oneOf", "anyOf") and error.context:
        fitting = [e for e in error.context if e.validator != "type"]
        if not fitting:
            break
        error = best_match(fitting)
    path = list(error.absolute_path)
    message = error.message
    if error.validator in ("required", "dependentRequired"):
        wanted = error.validator_value
        if isinstance(wanted, dict):  # dependentRequired: {"a": ["b"]}
            wanted = [n for names in wanted.values() for n in names]
        missing = [n for n in wanted if n not in error.instance]
        path.append(missing[0] if missing else "?")
        message = "is required"
    elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in known)
        path.append(extra[0] if extra else "?")
        message = "is not a known parameter"
    return ParamsError(_field_path(path), message)


def _field_path(path: list) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "params"
