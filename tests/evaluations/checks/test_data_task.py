"""Data-task checks: tables, charts and the analysis-quality judge (evaluators.md §5)."""

import pytest

from evaluations.checks import ParamsError, evaluate, validate_params
from evaluations.checks.tables import TableError, parse

from .judges import Answer, ScriptedJudge

pytestmark = pytest.mark.usefixtures("both_paths")  # evaluate and aevaluate (conftest)


def table(columns, *rows):
    return {"columns": list(columns), "rows": [list(r) for r in rows]}


def expecting(value):
    return {"input": "Sales by region", "expected": {"table": value}}


def run(kind, params, output, case):
    return evaluate(kind, params, case, {"output": output})


# --- reading tables ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {"columns": ["region", "total"], "rows": [["north", 10], ["south", 7.5]]},
        {
            "columns": [{"name": "region"}, {"name": "total"}],
            "data": [["north", 10], ["south", 7.5]],
        },
        [{"region": "north", "total": 10}, {"region": "south", "total": 7.5}],
        {"region": ["north", "south"], "total": [10, 7.5]},
        {"table": [{"region": "north", "total": 10}, {"region": "south", "total": 7.5}]},
        '[{"region": "north", "total": 10}, {"region": "south", "total": 7.5}]',
        "region,total\nnorth,10\nsouth,7.5\n",
        "region;total\nnorth;10\nsouth;7.5",
        "Here it is:\n\n| region | total |\n|:---|---:|\n| north | 10 |\n| south | 7.5 |\n\nDone.",
        'Result: {"columns": ["region", "total"], "rows": [["north", 10], ["south", 7.5]]}',
    ],
)
def test_every_accepted_table_form_reads_as_the_same_table(value):
    parsed = parse(value)
    assert parsed.columns == ["region", "total"]
    assert parsed.rows == [["north", 10], ["south", 7.5]]


@pytest.mark.parametrize(
    "value",
    ["just a sentence", [[1, 2], [3, 4]], 42, {"a": 1}, {"columns": ["a", "b"], "rows": [[1]]}, ""],
)
def test_values_that_are_not_tables_are_rejected(value):
    with pytest.raises(TableError):
        parse(value)


def test_cells_read_from_text_are_typed():
    parsed = parse('a,b,c,d,e\n1,2.5,true,,"1,234"\n')
    assert parsed.rows == [[1, 2.5, True, None, 1234]]


# --- table_shape ---------------------------------------------------------------------------------

THREE_BY_TWO = table(["a", "b"], [1, 2], [3, 4], [5, 6])


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        (THREE_BY_TWO, THREE_BY_TWO, 1.0),
        (table(["a", "b"], [1, 2], [3, 4], [5, 6], [7, 8]), THREE_BY_TWO, 0.0),
        (table(["a", "b"]), table(["a", "b"]), 1.0),
    ],
)
def test_table_shape_follows_the_reference_vectors(output, expected, score):
    assert run("table_shape", {}, output, expecting(expected)).score == score


def test_table_shape_partial_credits_each_matching_dimension():
    output = table(["a", "b"], [1, 2], [3, 4], [5, 6], [7, 8])
    verdict = run("table_shape", {"partial": True}, output, expecting(THREE_BY_TWO))
    assert verdict.score == 0.5
    assert verdict.reason == "rows 4 (expected 3), columns 2 (expected 2)"


def test_table_shape_takes_the_expected_shape_from_params():
    assert run("table_shape", {"rows": 3, "columns": 2}, THREE_BY_TWO, {}).score == 1.0
    assert run("table_shape", {"check": "columns", "columns": 3}, THREE_BY_TWO, {}).score == 0.0


def test_table_shape_scores_zero_when_the_output_is_not_a_table():
    verdict = run("table_shape", {}, "I could not compute it.", expecting(THREE_BY_TWO))
    assert verdict.score == 0.0
    assert verdict.reason.startswith("output is not a table")


def test_table_shape_skips_without_an_expected_shape():
    assert run("table_shape", {}, THREE_BY_TWO, {}).outcome == "skipped"
    assert run("table_shape", {}, "not a table", {}).outcome == "skipped"


def test_table_checks_report_an_invalid_expected_table_as_an_error():
    verdict = run("table_values", {}, THREE_BY_TWO, expecting([[1, 2]]))
    assert verdict.outcome == "error"
    assert verdict.reason.startswith("the expected table is invalid")


# --- table_columns -------------------------------------------------------------------------------

ABC = table(["a", "b", "c"])


@pytest.mark.parametrize(
    ("columns", "match", "score"),
    [
        (["a", "c"], "f1", 0.8),
        (["a", "c"], "set", 0.0),
        (["c", "b", "a"], "set", 1.0),
        (["c", "b", "a"], "ordered", 0.0),
        (["a", "b", "c"], "ordered", 1.0),
        (["a", "b", "c", "d"], "subset", 1.0),
        (["a", "b"], "subset", 0.0),
        (["A", " b ", "c"], "set", 1.0),
    ],
)
def test_table_columns_follows_the_reference_vectors(columns, match, score):
    verdict = run("table_columns", {"match": match}, table(columns), expecting(ABC))
    assert verdict.score == pytest.approx(score)


def test_table_columns_names_missing_and_unexpected_columns():
    verdict = run("table_columns", {}, table(["a", "x"]), expecting(ABC))
    assert verdict.reason == "columns differ (set): missing: b, c; unexpected: x"


def test_table_columns_can_be_case_sensitive():
    params = {"columns": ["Region"], "case_sensitive": True}
    assert run("table_columns", params, table(["region"]), {}).score == 0.0


def test_table_columns_skips_without_expected_columns():
    assert run("table_columns", {}, ABC, {}).outcome == "skipped"


# --- table_schema --------------------------------------------------------------------------------


def test_table_schema_follows_the_reference_vector():
    params = {"columns": {"id": "int64", "amt": "float64"}}
    output = table(["id", "amt"], [1, "12.50 EUR"], [2, "3.10 EUR"])
    verdict = run("table_schema", params, output, {})
    assert verdict.score == 0.5
    assert verdict.evidence["columns"][1] == {
        "column": "amt",
        "expected": "float",
        "actual": "string",
        "ok": False,
    }


def test_table_schema_numeric_equiv_lets_integers_and_floats_stand_for_each_other():
    params = {"columns": {"id": "int64", "amt": "float64"}}
    output = table(["id", "amt"], [1.0, 2.5], [2.0, 3.5])
    assert run("table_schema", params, output, {}).score == 0.5
    assert run("table_schema", {**params, "numeric_equiv": True}, output, {}).score == 1.0


def test_table_schema_infers_the_types_from_the_expected_table():
    expected = table(["day", "n", "ok"], ["2024-01-01", 3, True])
    good = "day,n,ok\n2024-02-01,5,false\n"
    assert run("table_schema", {}, good, expecting(expected)).score == 1.0
    bad = table(["day", "n"], ["Monday", 5])
    verdict = run("table_schema", {}, bad, expecting(expected))
    assert verdict.score == pytest.approx(1 / 3)
    assert "ok is missing" in verdict.reason


def test_table_schema_rejects_an_unknown_type_name():
    with pytest.raises(ParamsError) as error:
        validate_params("table_schema", {"columns": {"amt": "money"}})
    assert error.value.field == "columns.amt"


def test_table_schema_skips_without_an_expected_schema():
    assert run("table_schema", {}, ABC, {}).outcome == "skipped"


# --- table_values --------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "score"), [(1.00001, 1.0), (1.0001, 0.0)])
def test_table_values_uses_the_pandas_default_tolerance(value, score):
    assert (
        run("table_values", {}, table(["x"], [value]), expecting(table(["x"], [1.0]))).score
        == score
    )


def test_table_values_ignores_row_order_and_column_order_by_default():
    expected = table(["n", "s"], [1, "a"], [2, "b"])
    output = table(["s", "n"], ["b", 2], ["a", 1])
    assert run("table_values", {}, output, expecting(expected)).score == 1.0
    assert run("table_values", {"order_matters": True}, output, expecting(expected)).score == 0.0


def test_table_values_pairs_near_equal_rows_by_their_labels():
    expected = table(["k", "v"], ["a", 1.0], ["b", 2.0], ["b", 2.0])
    output = table(["k", "v"], ["b", 2.000001], ["a", 1.000001], ["b", 1.999999])
    assert run("table_values", {}, output, expecting(expected)).score == 1.0
    swapped = table(["k", "v"], ["b", 1.000001], ["a", 2.000001], ["b", 2.0])
    verdict = run("table_values", {"score": "f1"}, swapped, expecting(expected))
    assert verdict.evidence["matched_rows"] == 1


def test_table_values_compares_rows_as_a_bag():
    verdict = run("table_values", {}, table(["n"], [1]), expecting(table(["n"], [1], [1])))
    assert verdict.score == 0.0
    assert verdict.evidence["missing_rows"] == [[1]]


def test_table_values_row_f1_follows_the_datacompy_vector():
    expected = table(["k"], *[[i] for i in range(5)])
    output = table(["k"], *[[i] for i in (0, 1, 2, 10, 11, 12)])
    verdict = run("table_values", {"score": "f1"}, output, expecting(expected))
    assert verdict.evidence["precision"] == 0.5
    assert verdict.evidence["recall"] == 0.6
    assert verdict.score == pytest.approx(0.5455, abs=1e-4)


@pytest.mark.parametrize(("value", "score"), [(100.04, 1.0), (100.1, 0.0)])
def test_table_values_accepts_viseval_tolerances(value, score):
    params = {"abs_tol": 0, "rel_tol": 0.0005}
    assert (
        run("table_values", params, table(["y"], [value]), expecting(table(["y"], [100.0]))).score
        == score
    )


@pytest.mark.parametrize(("value", "score"), [("3.141590", 1.0), ("3.1416", 0.0)])
def test_table_values_compares_numbers_written_as_text(value, score):
    params = {"abs_tol": 1e-6, "rel_tol": 0}  # DABench's rule
    output = [{"pi": value}]
    assert run("table_values", params, output, expecting(table(["pi"], [3.14159]))).score == score


def test_table_values_allows_a_tolerance_per_column():
    params = {"tolerances": {"total": {"abs_tol": 0.5}}}
    output = table(["n", "total"], [1, 10.4])
    assert (
        run("table_values", params, output, expecting(table(["n", "total"], [1, 10.0]))).score
        == 1.0
    )


def test_table_values_scores_zero_when_an_expected_column_is_missing():
    verdict = run("table_values", {}, table(["a"], [1]), expecting(table(["a", "b"], [1, 2])))
    assert (verdict.score, verdict.reason) == (0.0, "columns differ: missing: b")


def test_table_values_ignores_extra_columns_unless_told_not_to():
    output, case = table(["a", "b"], [1, 2]), expecting(table(["a"], [1]))
    assert run("table_values", {}, output, case).score == 1.0
    assert run("table_values", {"ignore_extra_columns": False}, output, case).score == 0.0


def test_table_values_matches_a_csv_output_against_a_json_expectation():
    output = "region,total\nnorth,10\nsouth,7.5\n"
    expected = [{"region": "south", "total": 7.5}, {"region": "north", "total": 10}]
    assert run("table_values", {}, output, expecting(expected)).score == 1.0


def test_table_values_skips_without_an_expected_table():
    verdict = run("table_values", {}, ABC, {"input": "q"})
    assert (verdict.outcome, verdict.reason) == (
        "skipped",
        "the case has no expected table (expected.table)",
    )


# --- chart_type ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "mark", "score"),
    [
        ("bar", "bar", 1.0),
        ("pie", "arc", 1.0),
        ("line", "area", 0.0),
        ("column chart", {"type": "bar"}, 1.0),
        ("scatter", "circle", 1.0),
        ("Donut", {"type": "arc", "innerRadius": 50}, 1.0),
        ("bar", "line", 0.0),
    ],
)
def test_chart_type_follows_the_alias_table(expected, mark, score):
    output = {"mark": mark, "encoding": {}}
    assert run("chart_type", {"type": expected}, output, {}).score == score


def test_chart_type_reads_the_expected_type_from_the_case_chart():
    case = {"expected": {"chart": {"mark": {"type": "point"}}}}
    assert run("chart_type", {}, '{"mark": "circle"}', case).score == 1.0
    assert run("chart_type", {}, {"mark": "bar"}, case).score == 0.0


def test_chart_type_accepts_a_layered_chart_that_contains_the_expected_mark():
    output = {"chart": {"layer": [{"mark": "bar"}, {"mark": "text"}]}}
    verdict = run("chart_type", {"type": "bar"}, output, {})
    assert verdict.score == 1.0
    assert verdict.evidence["actual"] == ["bar", "text"]


def test_chart_type_scores_zero_when_the_output_is_not_a_chart():
    assert run("chart_type", {"type": "bar"}, "A bar chart would fit.", {}).score == 0.0


def test_chart_type_skips_without_an_expected_type():
    assert run("chart_type", {}, {"mark": "bar"}, {}).outcome == "skipped"


def test_chart_type_rejects_an_unknown_type_name():
    with pytest.raises(ParamsError) as error:
        validate_params("chart_type", {"type": "sunburst"})
    assert error.value.field == "type"


# --- analysis_quality ----------------------------------------------------------------------------


def grade(score):
    return {"reason": "clear", "score": score}


@pytest.mark.parametrize(("raw", "score"), [(1, 0.0), (4, 0.75), (5, 1.0)])
def test_analysis_quality_normalizes_the_one_to_five_grade(raw, score):
    judge = ScriptedJudge({"data.analysis_quality": [grade(raw)]})
    verdict = evaluate("analysis_quality", {}, expecting(THREE_BY_TWO), {"output": "x"}, judge)
    assert (verdict.outcome, verdict.score) == ("scored", score)


def test_analysis_quality_is_an_error_for_a_grade_outside_the_scale():
    judge = ScriptedJudge({"data.analysis_quality": [Answer(True, grade(6), None, "{}")]})
    verdict = evaluate("analysis_quality", {}, expecting(THREE_BY_TWO), {"output": "x"}, judge)
    assert (verdict.outcome, verdict.score) == ("error", None)


def test_analysis_quality_cuts_long_outputs():
    judge = ScriptedJudge({"data.analysis_quality": [grade(3)]})
    params = {"max_output_chars": 500}
    evaluate("analysis_quality", params, {"input": "q"}, {"output": "x" * 2000}, judge)
    assert judge.asked[0][1]["output"].endswith("[truncated: 1500 more characters]")


def test_analysis_quality_skips_without_a_task():
    verdict = evaluate("analysis_quality", {}, {}, {"output": "x"}, ScriptedJudge({}))
    assert verdict.outcome == "skipped"
