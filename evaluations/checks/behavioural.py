"""Behavioural checks: cheap, certain, no model ("start here").

They read only the transcript's shape, timing and tool calls (through
`sherlock.core.transcripts.tool_calls`, the reader evidence collection and the export share), so
they cost nothing and always give the same answer. `tools_used` is the one the seeds single out: set
it to confirm the agent searched the collection instead of answering from memory, or invert it
as a guardrail ("never sends email"). Semantics follow evaluators.md §2.1-2.4 (promptfoo,
Vertex AI, Google ADK).
"""

from __future__ import annotations

import json
from fnmatch import fnmatchcase

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from sherlock.core.transcripts import ToolCall, read_expected_calls, tool_calls

from . import charts, tables
from .base import (
    CheckKind,
    CheckVerdict,
    ParamsError,
    binary,
    embedded_json_values,
    errored,
    expected,
    finite_number,
    has_output,
    maximum_matching,
    needed_when,
    only_when,
    params_object,
    register,
    scored,
    skipped,
)

# --- tool calls ----------------------------------------------------------------------------------


def same_value(a, b) -> bool:
    # True == 1 in Python, but a tool that got `true` did not get `1`.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def arguments_match(expected_args, actual_args, how: str) -> bool:
    """`subset`: every expected key is present and matches, recursively (promptfoo partial);
    lists must match element-wise. `exact`: deep equality."""
    if isinstance(expected_args, dict):
        if not isinstance(actual_args, dict):
            return False
        if how == "exact" and set(expected_args) != set(actual_args):
            return False
        return all(
            k in actual_args and arguments_match(v, actual_args[k], how)
            for k, v in expected_args.items()
        )
    if isinstance(expected_args, list):
        return (
            isinstance(actual_args, list)
            and len(expected_args) == len(actual_args)
            and all(
                arguments_match(e, a, how) for e, a in zip(expected_args, actual_args, strict=True)
            )
        )
    return same_value(expected_args, actual_args)


def recorded_calls(transcript: dict, params: dict) -> list[ToolCall] | None:
    """The calls to judge, or None when the transcript does not record tool calls at all.

    A missing `tool_calls` key is not "no calls": a guardrail must not pass on a transcript that
    could not have shown the forbidden call. Adapters write `[]` when the agent called nothing.
    Denied calls count by default: the agent attempted them, and the policy stopping it is not
    the agent's merit (the contract keeps intentional denials separate for the same reason).
    """
    calls = tool_calls(transcript)
    if calls is not None and not params.get("count_denied", True):
        calls = [c for c in calls if not c.denied]
    return calls


def recorded_or_verdict(transcript: dict, params: dict):
    """`(calls, None)` to judge, or `(None, verdict)` when they cannot be: `error` for malformed
    tool calls, `skipped` when the transcript records none at all."""
    try:
        calls = recorded_calls(transcript, params)
    except ValueError as exc:
        return None, errored(f"the transcript's tool calls are invalid: {exc}")
    if calls is None:
        return None, skipped("the transcript does not record tool calls")
    return calls, None


def in_order(reference: list, actual: list, matches) -> bool:
    # Greedy earliest match is optimal for "is a subsequence" (evaluators.md §2.4, ADK IN_ORDER).
    position = 0
    for ref in reference:
        while position < len(actual) and not matches(ref, actual[position]):
            position += 1
        if position == len(actual):
            return False
        position += 1
    return True


def exact(reference: list, actual: list, matches) -> bool:
    return len(reference) == len(actual) and all(map(matches, reference, actual))


def any_order(reference: list, actual: list, matches) -> bool:
    # Multiset containment: each reference call consumes its own actual call (ADK ANY_ORDER).
    return len(maximum_matching(reference, actual, matches)) == len(reference)


def describe(call: ToolCall) -> str:
    text = call.name
    if call.arguments is not None:
        text += f"({json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)})"
    return text + (" [denied]" if call.denied else "")


_TOOL_CALL_FIELDS = {
    "count_denied": {
        "type": "boolean",
        "default": True,
        "description": "Count calls the policy denied (the agent still attempted them).",
    },
}

# --- kinds ---------------------------------------------------------------------------------------


@register
class OutputType(CheckKind):
    """Does the output have the expected shape: text, JSON, JSON matching a schema, table, chart?

    `json` accepts any JSON value, as promptfoo `is-json` does; a transcript output that is
    already structured (not a string) is JSON by construction. `mode: embedded` also accepts JSON
    inside prose and passes when any embedded value fits (promptfoo `contains-json`). An empty
    string fails every type; a missing output is skipped (evaluators.md §2.1).
    """

    kind = "output_type"
    group = "behavioural"
    needs = ("output",)
    description = "The output has the expected shape: text, JSON, JSON Schema, table, chart spec."
    params_schema = params_object(
        {
            "type": {
                "enum": ["text", "json", "json_schema", "table", "chart_spec"],
                "description": "The shape the output must have.",
            },
            "schema": {"type": "object", "description": "JSON Schema (draft 2020-12)."},
            "mode": {
                "enum": ["whole", "embedded"],
                "default": "whole",
                "description": "embedded also accepts JSON found inside prose.",
            },
        },
        required=("type",),
        allOf=[needed_when("schema", "type", "json_schema")],
    )

    def clean(self, params):
        only_when(params, "schema", "type", "json_schema")
        if params["type"] == "json_schema":
            try:
                Draft202012Validator.check_schema(params["schema"])
            except SchemaError as exc:
                raise ParamsError("schema", f"is not a valid JSON Schema: {exc.message}") from None
        return params

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        if not has_output(transcript):
            return skipped("no output")
        output, wanted = transcript["output"], params["type"]
        if wanted == "text":
            if not isinstance(output, str):
                return binary(False, "output is structured JSON, not text")
            return binary(
                bool(output.strip()), "output is text" if output.strip() else "output is empty"
            )
        if wanted in ("json", "json_schema"):
            return self._json(params, output)
        if wanted == "table":
            try:
                table = tables.parse(output)
            except tables.TableError as exc:
                return binary(False, f"output is not a table: {exc}")
            return binary(
                True,
                f"output is a table of shape {table.shape}",
                {"columns": table.columns, "rows": len(table.rows)},
            )
        try:
            spec = charts.find_spec(output)
        except charts.ChartError as exc:
            return binary(False, f"output is not a chart spec: {exc}")
        return binary(True, "output is a Vega-Lite chart spec", {"marks": charts.marks(spec)})

    def _json(self, params, output) -> CheckVerdict:
        if not isinstance(output, str):
            candidates = [output]
        else:
            try:
                candidates = [json.loads(output)]
            except ValueError:
                candidates = embedded_json_values(output) if params["mode"] == "embedded" else []
        if not candidates:
            return binary(False, "output is not JSON")
        if params["type"] == "json":
            return binary(True, "output is JSON")
        validator = Draft202012Validator(params["schema"])
        problems = []
        for value in candidates:
            error = next(iter(validator.iter_errors(value)), None)
            if error is None:
                return binary(True, "output matches the JSON Schema")
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            problems.append({"path": where, "message": error.message})
        return binary(
            False,
            f"output does not match the JSON Schema at {problems[0]['path']}: "
            f"{problems[0]['message']}",
            {"errors": problems[:5]},
        )


@register
class Latency(CheckKind):
    """Was the agent fast enough: 1 when `latency_ms <= max_ms` (inclusive), else 0.

    Graded mode keeps full marks up to `max_ms` and then falls linearly to 0 at `zero_ms`
    (default twice `max_ms`), so a regression from 2.1 s to 3.5 s is visible. Raw milliseconds
    never go in the score (evaluators.md §2.2). An unknown or impossible latency is an `error`,
    not a skip: the engine always measures it, so its absence is a fault to look at.
    """

    kind = "latency"
    group = "behavioural"
    needs = ("latency_ms",)
    description = "Latency under a threshold (1/0), or a linear score between two bounds."
    params_schema = params_object(
        {
            "max_ms": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Latency (ms) at or under which the check scores 1.",
            },
            "graded": {
                "type": "boolean",
                "default": False,
                "description": "Score linearly from 1 at max_ms to 0 at zero_ms instead of 1/0.",
            },
            "zero_ms": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Graded mode: latency scored 0 (default 2 x max_ms).",
            },
        },
        required=("max_ms",),
    )

    def clean(self, params):
        # The default zero_ms is not written into the params: a case that overrides max_ms
        # alone must get twice its own max_ms, not a stored value below it.
        if "zero_ms" in params:
            if not params["graded"]:
                raise ParamsError("zero_ms", "is only used with graded: true")
            if params["zero_ms"] <= params["max_ms"]:
                raise ParamsError("zero_ms", "must be greater than max_ms")
        return params

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        latency = transcript.get("latency_ms")
        if latency is None:
            return errored("latency unknown: the transcript has no latency_ms")
        if not finite_number(latency) or latency < 0:
            return errored(f"latency unusable: {latency!r}")
        evidence = {"latency_ms": latency, "max_ms": params["max_ms"]}
        if latency <= params["max_ms"]:
            return scored(1.0, f"{latency:g} ms <= {params['max_ms']:g} ms", evidence)
        if not params["graded"]:
            return scored(0.0, f"{latency:g} ms > {params['max_ms']:g} ms", evidence)
        zero = params.get("zero_ms", 2 * params["max_ms"])
        score = max(0.0, (zero - latency) / (zero - params["max_ms"]))
        return scored(
            score,
            f"{latency:g} ms, graded between {params['max_ms']:g} and {zero:g} ms",
            {**evidence, "zero_ms": zero},
        )


@register
class ToolsUsed(CheckKind):
    """Did the agent call the tools it should have (or, `forbidden`, none it must not)? The
    tools come from `params.tools`, else the case's `expected_tools`; `match` is `any_order`,
    `in_order` or `exact`, a tool's `arguments` compared as a `subset`, `exact`ly or not at all,
    names may be globs. An explicit empty list passes only with `exact` and no call at all;
    with another match it is refused in params and skipped from a case (docs/checks.md,
    "Tool calls" and "Empty inputs"). Score 1/0.
    """

    kind = "tools_used"
    group = "behavioural"
    needs = ("tool_calls", "expected_tools")
    description = "The agent called the expected tools; inverted, a forbidden tool was not called."
    params_schema = params_object(
        {
            "tools": {
                "type": "array",
                "items": {
                    "oneOf": [
                        {"type": "string", "minLength": 1},
                        {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string", "minLength": 1},
                                "arguments": {"type": "object"},
                            },
                        },
                    ]
                },
                "description": "Tools to look for (names may be glob patterns); else the case's "
                "expected_tools.",
            },
            "match": {
                "enum": ["any_order", "in_order", "exact"],
                "default": "any_order",
                "description": "in_order: as a subsequence; exact: these calls only, in order.",
            },
            "arguments": {
                "enum": ["subset", "exact", "ignore"],
                "default": "subset",
                "description": "How expected arguments compare with the call's.",
            },
            "forbidden": {
                "type": "boolean",
                "default": False,
                "description": "Invert: 1 when none of these tools was called (a guardrail).",
            },
            **_TOOL_CALL_FIELDS,
        }
    )

    def clean(self, params):
        # Store one shape: {"name"} or {"name", "arguments"}, whichever way the tool was given.
        if "tools" in params:
            params["tools"] = [{"name": t} if isinstance(t, str) else t for t in params["tools"]]
            if not params["tools"] and (params["match"] != "exact" or params["forbidden"]):
                raise ParamsError(
                    "tools",
                    "an empty list means no tool may be called, which needs match: exact "
                    "(and not forbidden)",
                )
        return params

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        # params.tools, when given (even empty), wins over the case's list.
        wanted = params["tools"] if "tools" in params else case.get("expected_tools")
        if wanted is None:
            return skipped("no expected tools (set params.tools or the case's expected_tools)")
        try:
            wanted = read_expected_calls(wanted, "expected tools")
        except ValueError as exc:
            return errored(f"expected tools are invalid: {exc}")
        if not wanted and (params["match"] != "exact" or params["forbidden"]):
            # Nothing to find (or to forbid): any transcript would pass, which is not a verdict.
            listed = "params.tools is empty" if "tools" in params else "the case lists no tools"
            why = (
                "a guardrail that forbids no tool forbids nothing"
                if params["forbidden"]
                else f"with match: {params['match']} calls besides the expected ones are allowed, "
                "so any transcript would pass"
            )
            return skipped(
                f"{listed}: {why}. To require that no tool be called, use match: exact "
                "(a case override); to check tools, list them in expected_tools"
            )
        calls, unscored = recorded_or_verdict(transcript, params)
        if unscored:
            return unscored
        if not wanted:
            called = [describe(c) for c in calls]
            return binary(
                not called,
                f"tools called where none may be: {', '.join(called)}"
                if called
                else "no tool was called, as expected",
                {"expected": [], "called": called},
            )

        def matches(want, call):
            if not fnmatchcase(call.name, want.name):
                return False
            if params["arguments"] == "ignore" or want.arguments is None:
                return True
            return arguments_match(want.arguments, call.arguments or {}, params["arguments"])

        evidence = {
            "expected": [describe(w) for w in wanted],
            "called": [describe(c) for c in calls],
        }
        if params["forbidden"]:
            hits = [describe(c) for c in calls if any(matches(w, c) for w in wanted)]
            return binary(
                not hits,
                f"forbidden tool called: {', '.join(hits)}" if hits else "no forbidden tool called",
                {**evidence, "forbidden_called": hits},
            )
        how = params["match"]
        if how == "any_order":
            paired = {i for i, _ in maximum_matching(wanted, calls, matches)}
            missing = [describe(w) for i, w in enumerate(wanted) if i not in paired]
            return binary(
                not missing,
                f"not called: {', '.join(missing)}"
                if missing
                else "every expected tool was called",
                {**evidence, "missing": missing},
            )
        ok = (in_order if how == "in_order" else exact)(wanted, calls, matches)
        label = "in order" if how == "in_order" else "exactly"
        return binary(ok, f"expected tools {'' if ok else 'not '}called {label}", evidence)


@register
class Trajectory(CheckKind):
    """Tool calls against the case's reference trajectory, per Vertex AI's trajectory metrics.

    A reference call without `arguments` matches on the name; with arguments it must be deeply
    equal, unless `ignore_arguments` (ADK `ignore_args`). `exact`, `in_order` (extra calls
    allowed) and `any_order` (multiset, ADK) score 1/0; `precision` and `recall` use membership
    as Vertex's text reads (evaluators.md §2.4: R=[A,B], P=[A,A] gives precision 1, recall 0.5).
    Empty sides: with no calls, precision is 0 (1 if the reference is empty too), so doing
    nothing never earns precision; an empty reference leaves recall undefined, so it is skipped;
    exact/in_order/any_order against an empty reference follow ADK (exact needs no calls).
    `single_tool_use` asks only whether `tool_name` was called and needs no reference. A
    reference call may be a plain tool name (a name-only call).
    """

    kind = "trajectory"
    group = "behavioural"
    needs = ("tool_calls", "expected.trajectory")
    description = "Exact, in-order, any-order, precision or recall against a reference trajectory."
    params_schema = params_object(
        {
            "metric": {
                "enum": [
                    "exact",
                    "in_order",
                    "any_order",
                    "precision",
                    "recall",
                    "single_tool_use",
                ],
                "description": "How the calls compare with the case's expected.trajectory.",
            },
            "tool_name": {
                "type": "string",
                "minLength": 1,
                "description": "With single_tool_use: the tool that must be called.",
            },
            "ignore_arguments": {
                "type": "boolean",
                "default": False,
                "description": "Compare tool names only.",
            },
            **_TOOL_CALL_FIELDS,
        },
        required=("metric",),
        allOf=[needed_when("tool_name", "metric", "single_tool_use")],
    )

    def clean(self, params):
        only_when(params, "tool_name", "metric", "single_tool_use")
        return params

    def evaluate(self, params, case, transcript, judge) -> CheckVerdict:
        metric = params["metric"]
        reference = expected(case, "trajectory")
        if metric != "single_tool_use" and reference is None:
            return skipped("the case has no reference trajectory (expected.trajectory)")
        try:
            reference = read_expected_calls(
                reference if reference is not None else [], "the reference"
            )
        except ValueError as exc:
            return errored(f"reference trajectory is invalid: {exc}")
        calls, unscored = recorded_or_verdict(transcript, params)
        if unscored:
            return unscored
        names = [c.name for c in calls]
        evidence = {
            "reference": [describe(r) for r in reference],
            "predicted": [describe(c) for c in calls],
        }

        if metric == "single_tool_use":
            used = params["tool_name"] in names
            return binary(
                used,
                f"{params['tool_name']} {'was' if used else 'was not'} called",
                {"predicted": evidence["predicted"]},
            )

        def matches(ref, call):
            if ref.name != call.name:
                return False
            if params["ignore_arguments"] or ref.arguments is None:
                return True
            return arguments_match(ref.arguments, call.arguments or {}, "exact")

        if metric == "precision":
            if not calls:
                return scored(1.0 if not reference else 0.0, "no tool calls", evidence)
            hits = sum(any(matches(r, c) for r in reference) for c in calls)
            return scored(
                hits / len(calls), f"{hits}/{len(calls)} calls are in the reference", evidence
            )
        if metric == "recall":
            if not reference:
                return skipped("the reference trajectory is empty: recall is undefined")
            hits = sum(any(matches(r, c) for c in calls) for r in reference)
            return scored(
                hits / len(reference),
                f"{hits}/{len(reference)} reference calls were made",
                evidence,
            )
        ok = {"exact": exact, "in_order": in_order, "any_order": any_order}[metric](
            reference, calls, matches
        )
        return binary(
            ok, f"trajectory {'matches' if ok else 'does not match'} ({metric})", evidence
        )
