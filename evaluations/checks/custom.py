"""Custom checks: your own label and plain-language criterion, judged on an anchored scale.

The seeds put the work in the criterion ("uses 'member', never 'user'; never promises a date;
ends with a next step") and recommend anchoring both ends of the scale, because a judge told
what 0 and 1 look like is far more consistent than one left to interpret "good". To keep such
judgements auditable, the judge must quote the spans of the output its verdict rests on, and we
check that every quote is really there: a verdict resting on words the output does not contain
is an `error` ("unverifiable evidence"), never a score.
"""

from __future__ import annotations

import re

from sherlock.core.limits import CRITERION_MAX

from . import rubrics
from .base import (
    CheckVerdict,
    ModelCheck,
    ParamsError,
    as_text,
    errored,
    params_object,
    question_text,
    register,
    scored,
)

_WHITESPACE = re.compile(r"\s+")
_ELLIPSIS = re.compile(r"\.\.\.|…")
_QUOTE_MARKS = " \"'`“”‘’«»„"


def _squash(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def quote_found(quote: str, output: str) -> bool:
    """Is the judge's quote in the output, verbatim up to whitespace?

    Case-sensitive, because "verbatim" is the point and case can carry meaning (a product name).
    Runs of whitespace count as one space (the judge sees JSON outputs re-indented and may
    re-wrap lines). Quote marks around the quote and an elision "..." are the judge's
    punctuation, not the output's: the fragments around an elision must appear in order.
    """
    text = _squash(output)
    fragments = [f.strip(_QUOTE_MARKS) for f in _ELLIPSIS.split(_squash(quote).strip(_QUOTE_MARKS))]
    fragments = [f for f in fragments if f]
    position = 0
    for fragment in fragments:
        found = text.find(fragment, position)
        if found < 0:
            return False
        position = found + len(fragment)
    return bool(fragments)


@register
class Custom(ModelCheck):
    """A label and a criterion, scored on an integer scale normalized as (s - lo) / (hi - lo).

    The scale defaults to 0-1 (pass/fail), or to the lowest and highest anchor when anchors are
    given as `{"0": "...", "1": "..."}`; it may be any integer range within 0-10 (DeepEval
    GEval's bounds). A judge score outside the scale is an error, not a clamp (evaluators.md §6).
    The label is the column header in results; its uniqueness is enforced by the dataset.
    """

    kind = "custom"
    group = "custom"
    needs = ("output",)
    description = "Your own criterion in plain language, with an optional anchored scale."
    params_schema = params_object(
        {
            "label": {
                "type": "string",
                "minLength": 1,
                "maxLength": 100,
                "description": "The results column header (the check's label).",
            },
            "criterion": {
                "type": "string",
                "minLength": 1,
                "maxLength": CRITERION_MAX,
                "description": "What the judge grades, in plain language.",
            },
            "anchors": {
                "oneOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "object",
                        "minProperties": 1,
                        "propertyNames": {"pattern": "^(10|[0-9])$"},
                        "additionalProperties": {"type": "string", "minLength": 1},
                    },
                ],
                "description": 'Text ("0 = ..., 1 = ...") or {"0": "...", "1": "..."}.',
            },
            "scale": {
                "type": "object",
                "additionalProperties": False,
                "required": ["min", "max"],
                "properties": {
                    "min": {"type": "integer", "minimum": 0, "maximum": 10},
                    "max": {"type": "integer", "minimum": 0, "maximum": 10},
                },
                "description": "Integer grades within 0-10; default 0-1 or the anchors' range.",
            },
        },
        required=("label", "criterion"),
    )

    def clean(self, params):
        # The scale is derived at scoring time, not stored: a case that overrides the anchors
        # must get the scale of its own anchors.
        low, high = scale(params)
        if low >= high:
            raise ParamsError(
                "scale.max" if "scale" in params else "anchors",
                f"the scale needs a low end below its high end, got {low}-{high}",
            )
        anchors = params.get("anchors")
        for key in anchors if isinstance(anchors, dict) else ():
            if not low <= int(key) <= high:
                raise ParamsError(f"anchors.{key}", f"is outside the scale {low}-{high}")
        return params

    async def judge_case(self, params, case, transcript, session) -> CheckVerdict:
        low, high = scale(params)
        output = as_text(transcript["output"])
        data = await session.ask(
            rubrics.CUSTOM,
            {
                "label": params["label"],
                "criterion": params["criterion"],
                "low": low,
                "high": high,
                "anchors": _anchors_text(params.get("anchors"), low, high),
                "question": question_text(case) or "(not given)",
                "output": output,
            },
        )
        grade = data.get("score")
        if not isinstance(grade, int) or isinstance(grade, bool) or not low <= grade <= high:
            raise session.unusable(f"score {grade!r} is outside {low}-{high}", data=data)
        quotes = [q for q in data.get("quotes") or [] if isinstance(q, str)]
        missing = [q for q in quotes if not quote_found(q, output)]
        evidence = {
            "label": params["label"],
            "grade": grade,
            "scale": [low, high],
            "quotes": quotes,
            "reason": data.get("reason", ""),
        }
        if not quotes:
            return errored(
                "unverifiable evidence: the judge quoted nothing from the output",
                {**evidence, "raw": session.last_raw},
            )
        if missing:
            return errored(
                f"unverifiable evidence: {len(missing)} of {len(quotes)} quotes are "
                f"not in the output, e.g. {missing[0]!r}",
                {**evidence, "missing_quotes": missing, "raw": session.last_raw},
            )
        return scored(
            (grade - low) / (high - low),
            f"{grade} on {low}-{high}: {data.get('reason', '')}",
            evidence,
        )


def scale(params: dict) -> tuple[int, int]:
    """The `scale` param, else the lowest and highest anchor point, else 0-1."""
    if "scale" in params:
        return params["scale"]["min"], params["scale"]["max"]
    anchors = params.get("anchors")
    points = sorted(int(k) for k in anchors) if isinstance(anchors, dict) else [0, 1]
    return points[0], points[-1]


def _anchors_text(anchors, low: int, high: int) -> str:
    if isinstance(anchors, dict):
        return "\n".join(f"{k} = {anchors[k]}" for k in sorted(anchors, key=int))
    if anchors:
        return anchors
    return f"{low} = does not meet the criterion; {high} = fully meets it"
