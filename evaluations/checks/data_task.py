"""Data-task checks: is the table or chart the agent produced the one the case expects?

The five structural checks are deterministic and split on purpose (shape, columns, types,
values, chart type) so a failure says what was wrong; run them before the model-based
`analysis_quality`, which judges what no comparison can (does the analysis answer the task).
The expected table is the case's `expected.table` (or params, for shape, columns and schema);
table formats are described in tables.py and docs/checks.md. A missing output or expectation is
`skipped`; an output that cannot be read as a table scores 0 (the agent had to produce one); an
expected table that cannot be read is an `error` in the case, shown rather than scored.
"""

from __future__ import annotations

import json

from . import charts, rubrics, tables
from .base import (
    CheckKind,
    CheckVerdict,
    ModelCheck,
    ParamsError,
    as_text,
    binary,
    errored,
    expected,
    has_output,
    params_object,
    question_text,
    register,
    scored,
    skipped,
)

_CASE_SENSITIVE = {
    "type": "boolean",
    "default": False,
    "description": "Compare column names case-sensitively (datacompy lowers).",
}


class TableCheck(CheckKind):
    """Shared loading of the produced and the expected table."""

    group = "data_task"
    needs = ("output", "expected.table")

    def load(self, case, transcript, *, need_expected=True):
        """(actual, expected) tables, or a verdict explaining why there is nothing to compare."""
        if not has_output(transcript):
            return skipped("no output")
        wanted = expected(case, "table")
        if wanted is None and need_expected:
            return skipped("the case has no expected table (expected.table)")
        if wanted is not None:
            try:
                wanted = tables.parse(wanted)
            except tables.TableError as exc:
                return errored(f"the expected table is invalid: {exc}")
        try:
            actual = tables.parse(transcript["output"])
        except tables.TableError as exc:
            return binary(False, f"output is not a table: {exc}")
        return actual, wanted


@register
class TableShape(TableCheck):
    """Row and column counts equal the expected ones (Spider: two empty results are equal).

    `rows`/`columns` params override the expected table's counts (or replace it). With
    `partial: true` each compared dimension counts half; otherwise the score is 1/0.
    """

    kind = "table_shape"
    description = "The table has the expected number of rows and columns."
    params_schema = params_object(
        {
            "rows": {"type": "integer", "minimum": 0, "description": "Else the expected table's."},
            "columns": {
                "type": "integer",
                "minimum": 1,
                "description": "Else the expected table's.",
            },
            "check": {
                "enum": ["both", "rows", "columns"],
                "default": "both",
                "description": "Which counts must match.",
            },
            "partial": {
                "type": "boolean",
                "default": False,
                "description": "Half a point per matching dimension.",
            },
        }
    )

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        loaded = self.load(case, transcript, need_expected=not {"rows", "columns"} & set(params))
        if isinstance(loaded, CheckVerdict):
            return loaded
        actual, wanted = loaded
        want = {"rows": params.get("rows"), "columns": params.get("columns")}
        if wanted is not None:
            want["rows"] = wanted.shape[0] if want["rows"] is None else want["rows"]
            want["columns"] = wanted.shape[1] if want["columns"] is None else want["columns"]
        dims = ["rows", "columns"] if params["check"] == "both" else [params["check"]]
        if any(want[d] is None for d in dims):
            return skipped("no expected shape (expected.table, or rows/columns params)")
        got = {"rows": actual.shape[0], "columns": actual.shape[1]}
        matched = [got[d] == want[d] for d in dims]
        score = sum(matched) / len(dims) if params["partial"] else float(all(matched))
        text = ", ".join(f"{d} {got[d]} (expected {want[d]})" for d in dims)
        return scored(score, text, {"actual": got, "expected": {d: want[d] for d in dims}})


@register
class TableColumns(TableCheck):
    """Column names against the expected ones (from params or the expected table).

    `set` (default): the same names in any order, Spider's column permutation; `ordered`: the
    same list (pandas `check_like=False`); `subset`: every expected column present, extra
    allowed; `f1`: partial credit, P = |A∩E|/|A|, R = |A∩E|/|E| (evaluators.md §5.2).
    Names are stripped and compared case-insensitively unless `case_sensitive`.
    """

    kind = "table_columns"
    description = "The table has the expected columns (set, order, subset or F1)."
    params_schema = params_object(
        {
            "columns": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "string"},
                "description": "Expected column names; else the expected table's.",
            },
            "match": {
                "enum": ["set", "ordered", "subset", "f1"],
                "default": "set",
                "description": "set: same names; ordered: same order too; subset: at least "
                "these; f1: a graded score.",
            },
            "case_sensitive": _CASE_SENSITIVE,
        }
    )

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        loaded = self.load(case, transcript, need_expected="columns" not in params)
        if isinstance(loaded, CheckVerdict):
            return loaded
        actual, wanted = loaded
        names = params.get("columns") or wanted.columns

        def key(n):
            return tables.column_key(n, params["case_sensitive"])

        got, want = [key(n) for n in actual.columns], [key(n) for n in names]
        common = set(got) & set(want)
        evidence = {
            "actual": actual.columns,
            "expected": names,
            "missing": [n for n in names if key(n) not in set(got)],
            "unexpected": [n for n in actual.columns if key(n) not in set(want)],
        }
        how = params["match"]
        if how == "f1":
            precision = len(common) / len(set(got)) if got else 0.0
            recall = len(common) / len(set(want))
            f1 = 2 * precision * recall / (precision + recall) if common else 0.0
            return scored(
                f1,
                f"column F1 {f1:.3f} (precision {precision:.3f}, recall {recall:.3f})",
                {**evidence, "precision": precision, "recall": recall},
            )
        ok = {
            "set": set(got) == set(want),
            "ordered": got == want,
            "subset": set(want) <= set(got),
        }[how]
        detail = "; ".join(
            f"{k}: {', '.join(v)}"
            for k, v in evidence.items()
            if k in ("missing", "unexpected") and v
        )
        if how == "ordered" and not ok and not detail:
            detail = "same columns in another order"
        return binary(
            ok, f"columns match ({how})" if ok else f"columns differ ({how}): {detail}", evidence
        )


@register
class TableSchema(TableCheck):
    """Each expected column has the expected type family; the score is the share that do.

    Families: integer, float, number (integer or float), boolean, datetime (ISO 8601 text),
    string; pandas dtype names are accepted (`int64`, `float64`, `object`...). Types come from
    the `columns` param or are inferred from the expected table. A missing column counts as
    wrong; an all-null column has no type and is not held against the table.
    `numeric_equiv` lets integer and float stand for each other (DS-1000's `check_dtype=False`).
    """

    kind = "table_schema"
    description = "Each expected column has the expected type (integer, float, string...)."
    params_schema = params_object(
        {
            "columns": {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": {"type": "string"},
                "description": 'Expected types, {"name": "integer"}; else inferred from the '
                "expected table.",
            },
            "numeric_equiv": {
                "type": "boolean",
                "default": False,
                "description": "Integer and float count as the same type.",
            },
            "case_sensitive": _CASE_SENSITIVE,
        }
    )

    def clean(self, params):
        for name, type_name in params.get("columns", {}).items():
            if type_name.strip().lower() not in tables.FAMILY_OF:
                raise ParamsError(
                    f"columns.{name}",
                    f"unknown type {type_name!r}; use one of " + ", ".join(tables.FAMILY_ALIASES),
                )
        return params

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        loaded = self.load(case, transcript, need_expected="columns" not in params)
        if isinstance(loaded, CheckVerdict):
            return loaded
        actual, wanted = loaded
        if "columns" in params:
            want = {n: tables.FAMILY_OF[t.strip().lower()] for n, t in params["columns"].items()}
        else:
            want = {
                n: tables.infer_family([r[i] for r in wanted.rows])
                for i, n in enumerate(wanted.columns)
            }
        index = tables.column_index(actual, params["case_sensitive"])
        report = []
        for name, family in want.items():
            i = index.get(tables.column_key(name, params["case_sensitive"]))
            got = None if i is None else tables.infer_family([r[i] for r in actual.rows])
            ok = got is not None and (
                family == "empty" or tables.families_match(got, family, params["numeric_equiv"])
            )
            report.append({"column": name, "expected": family, "actual": got, "ok": ok})
        good = sum(r["ok"] for r in report)
        wrong = [
            f"{r['column']} is {r['actual'] or 'missing'}, expected {r['expected']}"
            for r in report
            if not r["ok"]
        ]
        return scored(
            good / len(report),
            f"{good}/{len(report)} columns have the expected type"
            + (f"; {'; '.join(wrong)}" if wrong else ""),
            {"columns": report},
        )


@register
class TableValues(TableCheck):
    """Cell values against the expected table, with numeric tolerance.

    Columns are aligned by name (the expected ones; extra produced columns are ignored unless
    `ignore_extra_columns: false`, since `table_columns` reports them); a missing column scores
    0. Rows compare as a bag, so order and duplicates follow Spider, unless `order_matters`
    (ask for it when the task demands a sort). Numbers match when |a - b| <= abs_tol + rel_tol *
    |b|, pandas' defaults 1e-8 and 1e-5, overridable per column in `tolerances`. `score: exact`
    gives 1/0; `f1` gives datacompy's row F1 (P = matched / produced, R = matched / expected).
    """

    kind = "table_values"
    description = "The table's values equal the expected ones, within a numeric tolerance."
    _tolerance = {"type": "number", "minimum": 0}
    params_schema = params_object(
        {
            "order_matters": {
                "type": "boolean",
                "default": False,
                "description": "Compare rows in order (else as a bag).",
            },
            "abs_tol": {
                **_tolerance,
                "default": 1e-8,
                "description": "Numbers are equal when |a - b| <= abs_tol + rel_tol x |b|.",
            },
            "rel_tol": {
                **_tolerance,
                "default": 1e-5,
                "description": "Relative tolerance (see abs_tol).",
            },
            "tolerances": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"abs_tol": _tolerance, "rel_tol": _tolerance},
                },
                "description": 'Per column: {"revenue": {"rel_tol": 0.01}}.',
            },
            "score": {
                "enum": ["exact", "f1"],
                "default": "exact",
                "description": "exact: 1/0; f1: row F1.",
            },
            "ignore_extra_columns": {
                "type": "boolean",
                "default": True,
                "description": "Columns the expected table lacks do not count.",
            },
            "case_sensitive": _CASE_SENSITIVE,
        }
    )

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        loaded = self.load(case, transcript)
        if isinstance(loaded, CheckVerdict):
            return loaded
        actual, wanted = loaded
        sensitive = params["case_sensitive"]
        index = tables.column_index(actual, sensitive)
        keys = [tables.column_key(n, sensitive) for n in wanted.columns]
        missing = [n for n, k in zip(wanted.columns, keys, strict=True) if k not in index]
        extra = [n for n in actual.columns if tables.column_key(n, sensitive) not in set(keys)]
        if missing or (extra and not params["ignore_extra_columns"]):
            return scored(
                0.0,
                "columns differ: "
                + "; ".join(
                    f"{label}: {', '.join(names)}"
                    for label, names in (("missing", missing), ("unexpected", extra))
                    if names
                ),
                {"missing_columns": missing, "unexpected_columns": extra},
            )
        projected = [[row[index[k]] for k in keys] for row in actual.rows]
        overrides = {
            tables.column_key(n, sensitive): t for n, t in params.get("tolerances", {}).items()
        }
        tolerance = [
            (
                overrides.get(k, {}).get("abs_tol", params["abs_tol"]),
                overrides.get(k, {}).get("rel_tol", params["rel_tol"]),
            )
            for k in keys
        ]

        def rows_equal(got, want):
            return all(
                tables.cells_equal(g, w, *tol)
                for g, w, tol in zip(got, want, tolerance, strict=True)
            )

        pairs = tables.match_rows(projected, wanted.rows, rows_equal, params["order_matters"])
        matched_wanted, matched_actual = {j for j, _ in pairs}, {i for _, i in pairs}
        evidence = {
            "expected_rows": len(wanted.rows),
            "actual_rows": len(projected),
            "matched_rows": len(pairs),
            "columns": wanted.columns,
            "missing_rows": [r for j, r in enumerate(wanted.rows) if j not in matched_wanted][:5],
            "unexpected_rows": [r for i, r in enumerate(projected) if i not in matched_actual][:5],
        }
        summary = (
            f"{len(pairs)} of {len(wanted.rows)} expected rows matched, {len(projected)} "
            "rows produced"
        )
        if params["score"] == "f1":
            precision = len(pairs) / len(projected) if projected else float(not wanted.rows)
            recall = len(pairs) / len(wanted.rows) if wanted.rows else float(not projected)
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            return scored(
                f1,
                f"row F1 {f1:.3f}: {summary}",
                {**evidence, "precision": precision, "recall": recall},
            )
        ok = len(pairs) == len(wanted.rows) == len(projected)
        return binary(ok, ("values match: " if ok else "values differ: ") + summary, evidence)


@register
class ChartType(CheckKind):
    """The Vega-Lite chart's mark family is the expected one (1/0).

    Expected comes from the `type` param (any name in charts.FAMILIES: "pie", "column chart",
    "scatter"...) or from the marks of the case's `expected.chart` spec. Every expected family
    must appear among the chart's marks, so a bar chart with a text layer for labels is still a
    bar chart. Aliases are exact, not VisEval's substring rule: "line" never accepts `area`.
    """

    kind = "chart_type"
    group = "data_task"
    needs = ("output", "expected.chart")
    description = "The chart is of the expected type (bar, line, area, point, arc...)."
    params_schema = params_object(
        {
            "type": {
                "type": "string",
                "minLength": 1,
                "description": "Expected chart type (bar, line, pie...); else expected.chart's.",
            }
        }
    )

    def clean(self, params):
        if "type" in params and charts.family(params["type"]) is None:
            raise ParamsError("type", f"unknown chart type {params['type']!r}")
        return params

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        if not has_output(transcript):
            return skipped("no output")
        if "type" in params:
            want = [charts.family(params["type"]) or str(params["type"]).lower()]
        elif expected(case, "chart") is not None:
            spec = expected(case, "chart")
            marks = charts.marks(spec) if isinstance(spec, dict) else []
            if not marks:
                return errored("the expected chart (expected.chart) has no mark")
            want = [charts.family(m) or m.lower() for m in marks]
        else:
            return skipped("no expected chart type (type param or expected.chart)")
        try:
            spec = charts.find_spec(transcript["output"])
        except charts.ChartError as exc:
            return binary(False, f"output is not a chart: {exc}")
        marks = charts.marks(spec)
        got = [charts.family(m) or m.lower() for m in marks]
        missing = sorted(set(want) - set(got))
        evidence = {
            "expected": sorted(set(want)),
            "actual_marks": marks,
            "actual": sorted(set(got)),
        }
        return binary(
            not missing,
            f"chart is {', '.join(sorted(set(got)))}"
            + (f", expected {', '.join(missing)}" if missing else ""),
            evidence,
        )


@register
class AnalysisQuality(ModelCheck):
    """A judge's overall grade of the analysis, anchored 1-5 and normalized as (s - 1) / 4.

    No framework defines this check; it follows evaluators.md §5.6 (G-Eval with fixed steps, one
    call). Correctness of the table itself is the deterministic checks' job; this one asks
    whether the analysis answers the task. Long outputs are cut at `max_output_chars` to bound
    cost, and the cut is stated in the prompt.
    """

    kind = "analysis_quality"
    group = "data_task"
    needs = ("input", "output")
    description = "A judge grades the overall quality of the data analysis (1-5)."
    params_schema = params_object(
        {
            "max_output_chars": {
                "type": "integer",
                "minimum": 500,
                "default": 12000,
                "description": "Output longer than this is cut before the judge reads it.",
            },
        }
    )

    def missing_input(self, params, case, transcript):
        if question_text(case) is None:
            return "the case has no input: no task to judge the analysis against"
        return super().missing_input(params, case, transcript)

    async def judge_case(self, params, case, transcript, session) -> CheckVerdict:
        limit = params["max_output_chars"]
        reference = {
            k: v
            for k, v in (case.get("expected") or {}).items()
            if k in ("output", "table", "chart") and v is not None
        }
        variables = {
            "question": question_text(case),
            "expected": _cut(json.dumps(reference, ensure_ascii=False), limit) if reference else "",
            "output": _cut(as_text(transcript["output"]), limit),
        }
        data = await session.ask(rubrics.ANALYSIS_QUALITY, variables)
        grade = data.get("score")
        if not isinstance(grade, int) or isinstance(grade, bool) or not 1 <= grade <= 5:
            raise session.unusable(f"score {grade!r} is outside 1-5", data=data)
        return scored(
            (grade - 1) / 4,
            f"{grade}/5: {data.get('reason', '')}",
            {"grade": grade, "reason": data.get("reason", "")},
        )


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[truncated: {len(text) - limit} more characters]"
