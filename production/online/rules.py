"""What an online rule selects and runs: sampling, filters, checks (docs/production-online.md).

Sampling is deterministic per trace id: a trace is in the sample when the first 8 bytes of
SHA-256 of its id, read as a fraction of 2**64, fall below the rate. Re-scoring, a second
worker or a restart make the same choice, and raising the rate keeps every trace sampled
before.

A filter is `{"on": "resource"|"span", "key": "service.name", "op": OP, "value": "..."}`
with OP one of `FILTER_OPS`; every filter of a rule must hold. `resource` reads the trace's
resource attributes; `span` holds when any span of the trace satisfies it. Values compare as
text: `equals`/`not_equals` on the whole value, `contains` a substring (or, for a list, an
element equal to the value), `exists` that the key is set (no value).

The checks of a rule are the checks of its library version (a frozen dataset version: reused
by reference, they cannot change under it), those it names or all, followed by its own, each
an object the check library validates (`validate_params`) with the fields of
`evaluations.Check` a scorer reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evaluations.checks import REGISTRY, ParamsError, UnknownCheckKind, validate_params
from evaluations.choices import CheckMode

FILTER_OPS = ("equals", "not_equals", "contains", "exists")
FILTER_SOURCES = ("resource", "span")
MAX_FILTERS = 20
MAX_CHECKS = 30


class RuleError(ValueError):
    """A rule's field that cannot be used: `field` names it, the message says why."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def sampled(trace_id: str, rate: float) -> bool:
    """Whether `trace_id` is in a sample of `rate` (0..1), the same answer every time."""
    if rate >= 1:
        return True
    if rate <= 0:
        return False
    digest = hashlib.sha256(str(trace_id).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def validate_filters(filters: Any) -> list[dict]:  # noqa: C901
    """The filters in their stored shape, or RuleError naming what is wrong."""
    if filters in (None, ""):
        return []
    if not isinstance(filters, list):
        raise RuleError("filters", "must be a list of filters")
    if len(filters) > MAX_FILTERS:
        raise RuleError("filters", f"at most {MAX_FILTERS} filters")
    cleaned = []
    for index, item in enumerate(filters):
        where = f"filter {index + 1}"
        if not isinstance(item, Mapping):
            raise RuleError("filters", f"{where}: must be an object with on, key, op, value")
        unknown = set(item) - {"on", "key", "op", "value"}
        if unknown:
            raise RuleError("filters", f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        on, key, op = item.get("on", "span"), item.get("key"), item.get("op", "equals")
        if on not in FILTER_SOURCES:
            raise RuleError("filters", f"{where}: on must be one of {', '.join(FILTER_SOURCES)}")
        if not isinstance(key, str) or not key.strip() or len(key) > 200:
            raise RuleError("filters", f"{where}: key must be an attribute name")
        if op not in FILTER_OPS:
            raise RuleError("filters", f"{where}: op must be one of {', '.join(FILTER_OPS)}")
        value = item.get("value")
        if op == "exists":
            if value not in (None, ""):
                raise RuleError("filters", f"{where}: exists takes no value")
            value = None
        elif not isinstance(value, str | int | float | bool) or len(str(value)) > 500:
            raise RuleError("filters", f"{where}: value must be a text of at most 500 characters")
        cleaned.append({"on": on, "key": key.strip(), "op": op, "value": value})
    return cleaned


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def holds(item: Mapping, attributes: Mapping) -> bool:
    """One filter on one set of attributes."""
    key, op = item["key"], item["op"]
    present = key in attributes and attributes[key] is not None
    if op == "exists":
        return present
    if not present:
        return op == "not_equals"
    value, wanted = attributes[key], _text(item["value"])
    if op == "equals":
        return _text(value) == wanted
    if op == "not_equals":
        return _text(value) != wanted
    if isinstance(value, list):  # contains
        return any(_text(element) == wanted for element in value)
    return wanted in _text(value)


def matches(filters: Iterable[Mapping], resource: Mapping, spans: Iterable[Mapping]) -> bool:
    """Whether a trace with these resource attributes and span attribute sets passes every
    filter (`spans` is read only when a filter is on spans)."""
    span_sets = None
    for item in filters:
        if item["on"] == "resource":
            if not holds(item, resource or {}):
                return False
            continue
        if span_sets is None:
            span_sets = [attributes or {} for attributes in spans]
        if not any(holds(item, attributes) for attributes in span_sets):
            return False
    return True


@dataclass(frozen=True)
class RuleCheck:
    """A rule's own check, with the fields a scorer reads of `evaluations.Check`."""

    label: str
    kind: str
    params: dict
    threshold: float | None
    mode: str
    judge_model: str = ""
    quality_grader: bool = False


def validate_checks(checks: Any) -> list[dict]:  # noqa: C901
    """A rule's own checks in their stored shape, params validated by the check library."""
    if checks in (None, ""):
        return []
    if not isinstance(checks, list):
        raise RuleError("checks", "must be a list of checks")
    if len(checks) > MAX_CHECKS:
        raise RuleError("checks", f"at most {MAX_CHECKS} checks")
    cleaned, labels = [], set()
    for index, item in enumerate(checks):
        where = f"check {index + 1}"
        if not isinstance(item, Mapping):
            raise RuleError("checks", f"{where}: must be an object with label, kind, params")
        unknown = set(item) - {"label", "kind", "params", "threshold", "mode"}
        if unknown:
            raise RuleError("checks", f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        label = item.get("label")
        if not isinstance(label, str) or not label.strip() or len(label) > 100:
            raise RuleError("checks", f"{where}: label must be a text of at most 100 characters")
        label = label.strip()
        if label in labels:
            raise RuleError("checks", f"{where}: label {label!r} is used twice")
        labels.add(label)
        try:
            params = validate_params(str(item.get("kind")), item.get("params") or {})
        except UnknownCheckKind as exc:
            raise RuleError("checks", f"{where}: {exc}") from None
        except ParamsError as exc:
            raise RuleError("checks", f"{where}: params: {exc}") from None
        threshold = item.get("threshold")
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not 0 <= threshold <= 1
        ):
            raise RuleError("checks", f"{where}: threshold must be a number from 0 to 1")
        mode = item.get("mode", CheckMode.BLOCKING)
        if mode not in CheckMode.values:
            raise RuleError("checks", f"{where}: mode must be blocking or informative")
        cleaned.append(
            {
                "label": label,
                "kind": item["kind"],
                "params": params,
                "threshold": threshold,
                "mode": mode,
            }
        )
    return cleaned


def uses_model(checks) -> bool:
    """Whether any of `checks` asks the judge."""
    return any(getattr(REGISTRY.get(check.kind), "uses_model", False) for check in checks)


def rule_checks(rule, library=None) -> list:
    """The checks `rule` runs, in order: its library version's (those it names, or all;
    `library` may give them, already loaded), then its own as `RuleCheck`s. The quality
    grader is the check named by `quality_check`, else the library's grader when selected."""
    selected = []
    if rule.library_version_id:
        rows = list(library if library is not None else rule.library_version.checks.all())
        wanted = set(rule.library_labels or ())
        selected = [row for row in rows if not wanted or row.label in wanted]
    own = [RuleCheck(**spec) for spec in rule.checks or []]
    return [*selected, *own]


def quality_label(rule, checks) -> str | None:
    """The label of the check whose score is the trace's task quality, or None."""
    labels = {check.label for check in checks}
    if rule.quality_check:
        return rule.quality_check if rule.quality_check in labels else None
    grader = next((c for c in checks if getattr(c, "quality_grader", False)), None)
    return grader.label if grader is not None else None
