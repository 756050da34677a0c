"""Behavioural checks: output_type, latency, tools_used, trajectory (evaluators.md §2.1-2.4)."""

import pytest

from evaluations.checks import ParamsError, evaluate, validate_params


def run(kind, params, transcript, case=None):
    return evaluate(kind, params, case or {}, transcript)


# --- output_type ---------------------------------------------------------------------------------

LAT_LON = {
    "type": "object",
    "required": ["lat", "lon"],
    "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90}},
}


@pytest.mark.parametrize(
    ("output", "mode", "score"),
    [
        ('{"lat": 10, "lon": 20}', "whole", 1.0),
        ('{"lat": 100, "lon": 20}', "whole", 0.0),
        ('Here you go: {"lat": 10, "lon": 20}', "whole", 0.0),
        ('Here you go: {"lat": 10, "lon": 20}', "embedded", 1.0),
        ({"lat": 10, "lon": 20}, "whole", 1.0),
    ],
)
def test_output_type_json_schema_follows_the_reference_vectors(output, mode, score):
    verdict = run(
        "output_type", {"type": "json_schema", "schema": LAT_LON, "mode": mode}, {"output": output}
    )
    assert (verdict.outcome, verdict.score) == ("scored", score)


def test_output_type_json_schema_failure_names_the_violated_rule():
    verdict = run(
        "output_type",
        {"type": "json_schema", "schema": LAT_LON},
        {"output": '{"lat": 100, "lon": 20}'},
    )
    assert verdict.evidence["errors"][0] == {
        "path": "lat",
        "message": "100 is greater than the maximum of 90",
    }


@pytest.mark.parametrize(
    ("output", "score"), [("42", 1.0), ("null", 1.0), ([1, 2], 1.0), ("", 0.0), ("not json", 0.0)]
)
def test_output_type_json_accepts_any_json_value_and_rejects_the_rest(output, score):
    assert run("output_type", {"type": "json"}, {"output": output}).score == score


def test_output_type_text_passes_for_text_and_fails_for_structured_or_empty_output():
    assert run("output_type", {"type": "text"}, {"output": "Hello"}).score == 1.0
    assert run("output_type", {"type": "text"}, {"output": {"a": 1}}).score == 0.0
    assert run("output_type", {"type": "text"}, {"output": "  "}).score == 0.0


def test_output_type_table_passes_for_a_markdown_table_and_fails_for_prose():
    table = "Sales:\n\n| region | total |\n|---|---|\n| north | 10 |\n| south | 7 |\n"
    assert run("output_type", {"type": "table"}, {"output": table}).score == 1.0
    assert run("output_type", {"type": "table"}, {"output": "no table here"}).score == 0.0


def test_output_type_chart_spec_needs_a_mark():
    spec = {"mark": {"type": "bar"}, "encoding": {}}
    assert run("output_type", {"type": "chart_spec"}, {"output": spec}).score == 1.0
    assert run("output_type", {"type": "chart_spec"}, {"output": {"data": []}}).score == 0.0


def test_output_type_skips_without_output():
    verdict = run("output_type", {"type": "text"}, {"latency_ms": 5})
    assert (verdict.outcome, verdict.score, verdict.reason) == ("skipped", None, "no output")


def test_output_type_json_schema_requires_a_schema():
    with pytest.raises(ParamsError) as error:
        validate_params("output_type", {"type": "json_schema"})
    assert error.value.field == "schema"


def test_output_type_rejects_an_invalid_schema():
    with pytest.raises(ParamsError) as error:
        validate_params("output_type", {"type": "json_schema", "schema": {"type": "thing"}})
    assert error.value.field == "schema"


def test_output_type_rejects_a_schema_with_another_type():
    with pytest.raises(ParamsError) as error:
        validate_params("output_type", {"type": "json", "schema": {}})
    assert error.value.field == "schema"


# --- latency -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("latency", "score"), [(5000, 1.0), (5001, 0.0), (12, 1.0)])
def test_latency_is_inclusive_at_the_threshold(latency, score):
    assert run("latency", {"max_ms": 5000}, {"latency_ms": latency}).score == score


@pytest.mark.parametrize(
    ("latency", "score"), [(800, 1.0), (1000, 1.0), (2000, 0.5), (3000, 0.0), (9000, 0.0)]
)
def test_latency_graded_falls_linearly_between_max_and_zero(latency, score):
    params = {"max_ms": 1000, "graded": True, "zero_ms": 3000}
    assert run("latency", params, {"latency_ms": latency}).score == pytest.approx(score)


def test_latency_graded_reaches_zero_at_twice_max_by_default():
    assert run("latency", {"max_ms": 1000, "graded": True}, {"latency_ms": 1500}).score == 0.5


def test_latency_override_of_max_ms_moves_the_default_zero_point_with_it():
    stored = validate_params("latency", {"max_ms": 1000, "graded": True})
    overridden = {**stored, "max_ms": 4000}  # how the engine merges a case override
    assert run("latency", overridden, {"latency_ms": 6000}).score == 0.5


def test_latency_unknown_is_an_error_not_a_score():
    verdict = run("latency", {"max_ms": 5000}, {"output": "hi"})
    assert (verdict.outcome, verdict.score) == ("error", None)
    assert "latency unknown" in verdict.reason


def test_latency_negative_is_an_error():
    assert run("latency", {"max_ms": 5000}, {"latency_ms": -3}).outcome == "error"


def test_latency_requires_max_ms():
    with pytest.raises(ParamsError) as error:
        validate_params("latency", {})
    assert (error.value.field, error.value.message) == ("max_ms", "is required")


def test_latency_zero_ms_must_lie_beyond_max_ms():
    with pytest.raises(ParamsError) as error:
        validate_params("latency", {"max_ms": 1000, "graded": True, "zero_ms": 1000})
    assert error.value.field == "zero_ms"


# --- tools_used ----------------------------------------------------------------------------------

CALLS = {
    "tool_calls": [
        {"name": "search_orders", "arguments": {"q": "late", "limit": 5}},
        {"name": "compose_reply", "arguments": {}},
    ]
}


@pytest.mark.parametrize(
    ("params", "score"),
    [
        ({"tools": ["search_orders", "compose_reply"]}, 1.0),
        ({"tools": ["search_orders", "refund"]}, 0.0),
        ({"tools": ["delete_db"], "forbidden": True}, 1.0),
        ({"tools": ["delete_db", "search_orders"], "forbidden": True}, 0.0),
        ({"tools": ["search_orders", "compose_reply"], "match": "in_order"}, 1.0),
        ({"tools": ["search_orders", "compose_reply"], "match": "exact"}, 1.0),
        ({"tools": ["compose_reply", "search_orders"], "match": "in_order"}, 0.0),
        ({"tools": ["search_orders"], "match": "exact"}, 0.0),
    ],
)
def test_tools_used_follows_the_reference_vectors(params, score):
    assert run("tools_used", params, CALLS).score == score


def test_tools_used_names_the_missing_tool():
    verdict = run("tools_used", {"tools": ["search_orders", "refund"]}, CALLS)
    assert verdict.evidence["missing"] == ["refund"]
    assert verdict.reason == "not called: refund"


def test_tools_used_reads_expected_tools_from_the_case():
    case = {"expected_tools": [{"name": "search_orders"}]}
    assert run("tools_used", {}, CALLS, case).score == 1.0


@pytest.mark.parametrize(
    ("arguments", "how", "score"),
    [
        ({"q": "late"}, "subset", 1.0),
        ({"q": "late"}, "exact", 0.0),
        ({"q": "late", "limit": 5}, "exact", 1.0),
        ({"q": "early"}, "subset", 0.0),
        ({"q": "early"}, "ignore", 1.0),
    ],
)
def test_tools_used_matches_arguments_as_asked(arguments, how, score):
    params = {"tools": [{"name": "search_orders", "arguments": arguments}], "arguments": how}
    assert run("tools_used", params, CALLS).score == score


def test_tools_used_needs_one_call_per_listed_tool():
    assert run("tools_used", {"tools": ["search_orders", "search_orders"]}, CALLS).score == 0.0


def test_tools_used_pairs_calls_optimally_not_greedily():
    transcript = {
        "tool_calls": [
            {"name": "search", "arguments": {"q": "a"}},
            {"name": "search", "arguments": {"q": "b"}},
        ]
    }
    params = {"tools": ["search", {"name": "search", "arguments": {"q": "a"}}]}
    assert run("tools_used", params, transcript).score == 1.0


def test_tools_used_parses_arguments_sent_as_a_json_string():
    transcript = {"tool_calls": [{"function": {"name": "search", "arguments": '{"q": "a"}'}}]}
    params = {"tools": [{"name": "search", "arguments": {"q": "a"}}]}
    assert run("tools_used", params, transcript).score == 1.0


def test_tools_used_forbidden_accepts_glob_patterns():
    transcript = {"tool_calls": [{"name": "send_email", "arguments": {}}]}
    verdict = run("tools_used", {"tools": ["send_*"], "forbidden": True}, transcript)
    assert verdict.score == 0.0
    assert verdict.evidence["forbidden_called"] == ["send_email({})"]


def test_tools_used_counts_denied_calls_unless_told_not_to():
    transcript = {"tool_calls": [{"name": "send_email", "arguments": {}, "denied": True}]}
    params = {"tools": ["send_email"], "forbidden": True}
    verdict = run("tools_used", params, transcript)
    assert verdict.score == 0.0
    assert verdict.evidence["forbidden_called"] == ["send_email({}) [denied]"]
    assert run("tools_used", {**params, "count_denied": False}, transcript).score == 1.0


def test_tools_used_is_an_error_for_a_tool_call_without_a_name():
    verdict = run("tools_used", {"tools": ["search"]}, {"tool_calls": [{"arguments": {}}]})
    assert verdict.outcome == "error"
    assert verdict.reason.startswith("the transcript's tool calls are invalid")


def test_tools_used_skips_without_expected_tools():
    verdict = run("tools_used", {}, CALLS)
    assert verdict.outcome == "skipped"
    assert "no expected tools" in verdict.reason


def test_tools_used_forbidden_skips_when_the_transcript_records_no_tool_calls():
    verdict = run("tools_used", {"tools": ["send_email"], "forbidden": True}, {"output": "ok"})
    assert (verdict.outcome, verdict.score) == ("skipped", None)


def test_tools_used_names_the_field_of_a_tool_without_name():
    with pytest.raises(ParamsError) as error:
        validate_params("tools_used", {"tools": [{"arguments": {}}]})
    assert str(error.value) == "tools[0].name: is required"


# --- trajectory ----------------------------------------------------------------------------------


def calls(*names):
    return {"tool_calls": [{"name": n, "arguments": {}} for n in names]}


def reference(*names):
    return {"expected": {"trajectory": [{"name": n} for n in names]}}


@pytest.mark.parametrize(
    ("ref", "pred", "scores"),
    [
        (("A", "B"), ("A", "C", "B"), (0, 1, 1, 2 / 3, 1)),
        (("A", "B"), ("B", "A"), (0, 0, 1, 1, 1)),
        (("A", "B"), ("A", "A"), (0, 0, 0, 1, 0.5)),
    ],
)
def test_trajectory_metrics_follow_the_vertex_vectors(ref, pred, scores):
    metrics = ("exact", "in_order", "any_order", "precision", "recall")
    got = [run("trajectory", {"metric": m}, calls(*pred), reference(*ref)).score for m in metrics]
    assert got == pytest.approx(list(scores))


def test_trajectory_single_tool_use_looks_for_the_named_tool():
    params = {"metric": "single_tool_use", "tool_name": "C"}
    assert run("trajectory", params, calls("A", "C", "B")).score == 1.0
    assert run("trajectory", params, calls()).score == 0.0


def test_trajectory_compares_arguments_unless_told_to_ignore_them():
    case = {"expected": {"trajectory": [{"name": "A", "arguments": {"x": 1}}]}}
    transcript = {"tool_calls": [{"name": "A", "arguments": {"x": 2}}]}
    assert run("trajectory", {"metric": "exact"}, transcript, case).score == 0.0
    params = {"metric": "exact", "ignore_arguments": True}
    assert run("trajectory", params, transcript, case).score == 1.0


def test_trajectory_precision_is_zero_for_an_agent_that_called_nothing():
    assert run("trajectory", {"metric": "precision"}, calls(), reference("A")).score == 0.0
    assert run("trajectory", {"metric": "precision"}, calls(), reference()).score == 1.0


def test_trajectory_recall_skips_an_empty_reference():
    verdict = run("trajectory", {"metric": "recall"}, calls("A"), reference())
    assert verdict.outcome == "skipped"


def test_trajectory_empty_reference_follows_adk():
    assert run("trajectory", {"metric": "exact"}, calls(), reference()).score == 1.0
    assert run("trajectory", {"metric": "exact"}, calls("A"), reference()).score == 0.0
    assert run("trajectory", {"metric": "in_order"}, calls("A"), reference()).score == 1.0


def test_trajectory_skips_without_a_reference():
    verdict = run("trajectory", {"metric": "exact"}, calls("A"))
    assert (verdict.outcome, verdict.score) == ("skipped", None)


def test_trajectory_single_tool_use_requires_tool_name():
    with pytest.raises(ParamsError) as error:
        validate_params("trajectory", {"metric": "single_tool_use"})
    assert error.value.field == "tool_name"


# --- malformed tool calls: an error to look at, never a pass ----------------------------------


@pytest.mark.parametrize(
    "tool_calls",
    ["email.send", {"name": "email.send"}, ["email.send"], [{"name": 5}], [None]],
    ids=["string", "object", "list-of-strings", "non-string-name", "null-item"],
)
def test_a_forbidden_tool_guardrail_is_an_error_when_tool_calls_are_malformed(tool_calls):
    verdict = run(
        "tools_used", {"tools": ["email.send"], "forbidden": True}, {"tool_calls": tool_calls}
    )

    assert (verdict.outcome, verdict.score) == ("error", None)
    assert verdict.reason.startswith("the transcript's tool calls are invalid")


def test_tool_calls_given_as_a_string_are_named_as_such():
    verdict = run("tools_used", {"tools": ["email.send"]}, {"tool_calls": "email.send"})

    assert verdict.reason == (
        "the transcript's tool calls are invalid: tool_calls must be a list of tool calls, got str"
    )


# A list of plain names is valid (tests/evaluations/checks/test_empty_inputs.py).
@pytest.mark.parametrize("expected_tools", ["search_orders", {"name": "search_orders"}, [7], [""]])
def test_tools_used_is_an_error_when_the_cases_expected_tools_are_malformed(expected_tools):
    verdict = run("tools_used", {}, CALLS, {"expected_tools": expected_tools})

    assert (verdict.outcome, verdict.score) == ("error", None)
    assert verdict.reason.startswith("expected tools are invalid")


@pytest.mark.parametrize("trajectory", ["AB", {"name": "A"}, [["A"]], [{"arguments": {}}]])
def test_trajectory_is_an_error_when_the_reference_is_malformed(trajectory):
    verdict = run(
        "trajectory",
        {"metric": "recall"},
        calls("A", "B"),
        {"expected": {"trajectory": trajectory}},
    )

    assert (verdict.outcome, verdict.score) == ("error", None)
    assert verdict.reason.startswith("reference trajectory is invalid")


@pytest.mark.parametrize("metric", ["precision", "single_tool_use"])
def test_trajectory_is_an_error_when_tool_calls_are_not_a_list(metric):
    params = {"metric": metric, **({"tool_name": "A"} if metric == "single_tool_use" else {})}

    verdict = run("trajectory", params, {"tool_calls": "A"}, reference("A"))

    assert (verdict.outcome, verdict.score) == ("error", None)
    assert "tool_calls must be a list" in verdict.reason
