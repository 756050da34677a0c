"""The check library's interface: registry, params validation, evaluate, rubrics."""

import dataclasses
import string
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from evaluations import checks
from evaluations.checks import (
    REGISTRY,
    RUBRICS,
    CheckVerdict,
    ParamsError,
    UnknownCheckKind,
    evaluate,
    get_kind,
    validate_params,
)
from evaluations.checks.base import GROUPS, maximum_matching

KINDS = {
    "behavioural": ["output_type", "latency", "tools_used", "trajectory"],
    "structured": [
        "faithfulness",
        "answer_relevance",
        "context_precision",
        "context_recall",
        "answer_relevance_overlap",
        "context_precision_overlap",
        "context_recall_overlap",
    ],
    "heuristic": ["completeness", "safety"],
    "data_task": [
        "table_shape",
        "table_columns",
        "table_schema",
        "table_values",
        "chart_type",
        "analysis_quality",
    ],
    "custom": ["custom"],
}
MODEL_KINDS = {
    "faithfulness",
    "answer_relevance",
    "context_precision",
    "context_recall",
    "completeness",
    "safety",
    "analysis_quality",
    "custom",
}
OFFLINE_KINDS = {"answer_relevance_overlap", "context_precision_overlap", "context_recall_overlap"}


def test_registry_holds_every_kind_in_design_order():
    assert list(REGISTRY) == [kind for group in GROUPS for kind in KINDS[group]]
    for group, kinds in KINDS.items():
        assert {REGISTRY[k].group for k in kinds} == {group}


@pytest.mark.parametrize("kind", list(REGISTRY))
def test_every_kind_declares_its_metadata(kind):
    cls = REGISTRY[kind]
    assert cls.kind == kind
    assert cls.description and cls.__doc__ and cls.needs
    assert cls.uses_model is (kind in MODEL_KINDS)
    assert cls.offline is (kind in OFFLINE_KINDS)
    Draft202012Validator.check_schema(cls.params_schema)
    assert cls.params_schema["additionalProperties"] is False


@pytest.mark.parametrize("kind", list(REGISTRY))
def test_every_default_is_valid_for_its_own_schema(kind):
    schema = REGISTRY[kind].params_schema
    for spec in schema["properties"].values():
        if "default" in spec:
            Draft202012Validator(spec).validate(spec["default"])


def test_get_kind_rejects_an_unknown_kind():
    with pytest.raises(UnknownCheckKind) as error:
        get_kind("bleu")
    assert isinstance(error.value, ValueError)


def test_validate_params_fills_defaults_without_touching_the_input():
    given = {"tools": ["search"]}
    params = validate_params("tools_used", given)
    assert params == {
        "tools": [{"name": "search"}],
        "match": "any_order",
        "arguments": "subset",
        "forbidden": False,
        "count_denied": True,
    }
    assert given == {"tools": ["search"]}


EXAMPLE_PARAMS = {
    "output_type": {"type": "json_schema", "schema": {"type": "object"}},
    "latency": {"max_ms": 2000, "graded": True},
    "tools_used": {"tools": ["search", {"name": "send", "arguments": {"to": "x"}}]},
    "trajectory": {"metric": "single_tool_use", "tool_name": "search"},
    "faithfulness": {},
    "answer_relevance": {"idk_weight": 1},
    "context_precision": {"k": 3},
    "context_recall": {},
    "answer_relevance_overlap": {"against": "question"},
    "context_precision_overlap": {"similarity_threshold": 0.6},
    "context_recall_overlap": {},
    "completeness": {},
    "safety": {"policy": "No dosages."},
    "table_shape": {"rows": 3},
    "table_columns": {"columns": ["a"], "match": "f1"},
    "table_schema": {"columns": {"a": "int64"}},
    "table_values": {"tolerances": {"a": {"abs_tol": 0.1}}},
    "chart_type": {"type": "pie chart"},
    "analysis_quality": {},
    "custom": {"label": "Tone", "criterion": "Polite.", "anchors": {"1": "rude", "5": "kind"}},
}


@pytest.mark.parametrize("kind", list(REGISTRY))
def test_normalized_params_validate_again_unchanged(kind):
    # The engine stores normalized params and evaluate() validates them again.
    once = validate_params(kind, EXAMPLE_PARAMS[kind])
    assert validate_params(kind, once) == once


def test_validate_params_accepts_none_as_no_params():
    assert validate_params("context_recall", None) == {}


@pytest.mark.parametrize(
    ("kind", "params", "field", "message"),
    [
        ("latency", {"max_ms": 100, "maxms": 3}, "maxms", "is not a known parameter"),
        ("latency", {"max_ms": "fast"}, "max_ms", "'fast' is not of type 'number'"),
        ("latency", {"max_ms": 0}, "max_ms", "0 is less than or equal to the minimum of 0"),
        ("tools_used", {"tools": ["a", {"name": ""}]}, "tools[1].name", None),
        ("tools_used", {"match": "sometimes"}, "match", None),
        ("table_values", {"tolerances": {"x": {"atol": 1}}}, "tolerances.x.atol", None),
        ("latency", [1], "params", "must be an object"),
    ],
)
def test_params_errors_name_the_field(kind, params, field, message):
    with pytest.raises(ParamsError) as error:
        validate_params(kind, params)
    assert error.value.field == field
    if message:
        assert error.value.message == message
    assert str(error.value) == f"{error.value.field}: {error.value.message}"
    assert isinstance(error.value, ValueError)


def test_evaluate_turns_bad_params_into_an_error_verdict():
    verdict = evaluate("latency", {}, {}, {"latency_ms": 3})
    assert verdict == CheckVerdict(None, "error", "invalid check: max_ms: is required", {}, [])


def test_evaluate_turns_an_unknown_kind_into_an_error_verdict():
    verdict = evaluate("bleu", {}, {}, {})
    assert (verdict.outcome, verdict.reason) == (
        "error",
        "invalid check: unknown check kind: 'bleu'",
    )


def test_evaluate_turns_a_bug_in_a_kind_into_an_error_verdict(monkeypatch):
    def broken(self, params, case, transcript, judge):
        raise KeyError("oops")

    monkeypatch.setattr(REGISTRY["latency"], "evaluate", broken)
    verdict = evaluate("latency", {"max_ms": 5}, {}, {})
    assert (verdict.outcome, verdict.score) == ("error", None)
    assert verdict.reason == "check latency failed: KeyError: 'oops'"
    assert "traceback" in verdict.evidence


def test_evaluate_accepts_a_missing_case_and_transcript():
    assert evaluate("output_type", {"type": "text"}, None, None).outcome == "skipped"


def test_a_verdict_serializes_to_a_plain_dict():
    verdict = evaluate("latency", {"max_ms": 5}, {}, {"latency_ms": 3})
    assert verdict.as_dict() == {
        "score": 1.0,
        "outcome": "scored",
        "reason": "3 ms <= 5 ms",
        "evidence": {"latency_ms": 3, "max_ms": 5},
        "judge_calls": [],
    }


def test_maximum_matching_finds_the_largest_pairing():
    left, right = ["ab", "a"], ["a", "b"]
    pairs = maximum_matching(left, right, lambda x, y: y in x)
    assert sorted(pairs) == [(0, 1), (1, 0)]


def test_the_library_imports_neither_django_nor_the_judge_client():
    code = (
        "import sys, evaluations.checks; "
        "bad = [m for m in sys.modules if m.startswith(('django', 'evaluations.judge'))]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    root = Path(checks.__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# --- rubrics -------------------------------------------------------------------------------------


def _objects(schema):
    if schema.get("type") == "object":
        yield schema
        for child in schema["properties"].values():
            yield from _objects(child)
    elif schema.get("type") == "array":
        yield from _objects(schema["items"])


@pytest.mark.parametrize("rubric", list(RUBRICS.values()), ids=list(RUBRICS))
def test_every_rubric_schema_is_strict_for_structured_outputs(rubric):
    Draft202012Validator.check_schema(rubric.schema)
    for obj in _objects(rubric.schema):
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])


@pytest.mark.parametrize("rubric", list(RUBRICS.values()), ids=list(RUBRICS))
def test_every_rubric_template_renders_and_keeps_braces_in_values(rubric):
    fields = {name for _, name, _, _ in string.Formatter().parse(rubric.template) if name}
    assert fields and all(name.isidentifier() for name in fields)
    rendered = rubric.template.format(**{name: "{x}" for name in fields})
    assert rendered.count("{x}") == len(fields)
    assert rubric.version >= 1 and rubric.system


def test_rubrics_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        RUBRICS["rag.claims"].version = 2


RICH_CASE = {
    "input": "Which city is largest?",
    "expected": {"output": "Tokyo", "table": [{"a": 1}]},
    "contexts": ["Tokyo is the largest city.", "Paris is in France."],
    "expected_tools": ["search"],
}
RICH_TRANSCRIPT = {
    "output": '{"mark": "arc", "answer": "Tokyo"}',
    "contexts": ["Tokyo is the largest city.", "Paris is in France."],
    "tool_calls": [{"name": "search", "arguments": {"to": "x"}}],
    "latency_ms": 100,
    "table": [{"a": 1.05}],
}


@pytest.mark.parametrize("kind", list(REGISTRY))
def test_evaluate_remembers_params_without_letting_a_check_change_them(kind):
    # evaluate() remembers normalized params per (kind, params) and shares them between
    # trials: a check that changed them would change every later trial's params.
    given = EXAMPLE_PARAMS[kind]
    first = evaluate(kind, given, RICH_CASE, RICH_TRANSCRIPT)
    remembered = checks._normalized[
        (kind, checks.json.dumps(given, sort_keys=True, separators=(",", ":")))
    ]
    assert remembered == validate_params(kind, given)
    second = evaluate(kind, given, RICH_CASE, RICH_TRANSCRIPT)
    assert remembered == validate_params(kind, given)
    assert (second.outcome, second.score, second.reason) == (
        first.outcome,
        first.score,
        first.reason,
    )


def test_evaluate_validates_params_that_changed_since_the_last_call():
    params = {"max_ms": 2000}
    assert evaluate("latency", params, {}, {"latency_ms": 3}).outcome == "scored"
    params["max_ms"] = "fast"  # the caller's dict changed: a new key, validated again
    assert evaluate("latency", params, {}, {"latency_ms": 3}).outcome == "error"
