"""What the contract reads: thresholds, trial records and trial files, checked on the way in.

Malformed input raises a ``ContractInputError`` that names the place (``trials[3]``,
``line 4``), the trial and the field. Missing *evidence* is not malformed input: a declared
completion without an outcome state, an effect without a destination state or a trial without
billed cost is read as a coverage defect, which the contract makes the coverage gate fail on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from evaluations.choices import BillingCoverage, EffectState, OutcomeVerdict
from sherlock.core import json_text
from sherlock.core.json_values import json_type
from sherlock.core.numbers import COUNT, USD

_OUTCOME_VERDICTS = frozenset(OutcomeVerdict.values)
_EFFECT_STATES = frozenset(EffectState.values)
_BILLING_COVERAGES = frozenset(BillingCoverage.values)


class ContractInputError(ValueError):
    """A trial record, trial file or thresholds object that the contract cannot read."""


class TrialRecordError(ContractInputError):
    """A trial record that is malformed (missing field, wrong type, unknown state)."""


class ThresholdsError(ContractInputError):
    """A thresholds object that is malformed or mixes the policy and file formats."""


def _decimal(value: Any, what: str) -> Decimal:
    """A JSON or database number as an exact Decimal; booleans, strings and NaN are refused."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValueError(f"{what} must be a number, not {json_type(value)}")
    # repr() of a float is the shortest string that reads back as the same float, so 0.44
    # becomes Decimal("0.44") rather than 0.440000000000000002220446...
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not number.is_finite():
        raise ValueError(f"{what} must be a finite number")
    return number


# --- Thresholds ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """The limits of one publishing policy, in the units of the measures.

    ``None`` for a floor or the budget means the policy sets no such limit (the limit passes
    and says "not set"); ``min_quality=None`` means there is no quality gate at all.
    """

    max_false_successes: int
    max_unknown_effects: int
    min_useful_progress: Decimal | None
    min_tool_effect_integrity: Decimal | None
    max_cost_per_verified_outcome_usd: Decimal | None
    min_quality: Decimal | None = None
    coverage_required: bool = True
    wilson_min_n: int = 30
    # A declared completion whose outcome no verifier checked ("unavailable") fails coverage
    # only when the policy says so; otherwise it is named as missing evidence (docs/contract.md,
    # "A dataset without outcome verifiers").
    requires_verified_outcomes: bool = False
    # Production windows only: cost priced from the tokens a tracer reported, with the team's
    # price, is recorded cost there (a trace carries no bill), so it does not fail coverage;
    # it is still named, and kept apart from billed cost (docs/production-online.md, "Cost").
    priced_usage_is_recorded: bool = False


# The thresholds declared with the contract's worked example, used when a trial file has none. The
# article warns that $0.60 is not a universal budget; a file or a policy should say its own.
DEFAULT_THRESHOLDS = Thresholds(
    max_false_successes=0,
    max_unknown_effects=0,
    min_useful_progress=Decimal("0.9"),
    min_tool_effect_integrity=Decimal("0.95"),
    max_cost_per_verified_outcome_usd=Decimal("0.6"),
    min_quality=None,
    coverage_required=True,
    wilson_min_n=30,
)

THRESHOLD_FIELDS = (
    "max_false_successes",
    "max_unknown_effects",
    "min_useful_progress",
    "min_tool_effect_integrity",
    "max_cost_per_verified_outcome_usd",
    "min_quality",
    "coverage_required",
    "requires_verified_outcomes",
)

# File-format key -> policy field.
_FILE_FIELDS = {
    "false_success_max_count": "max_false_successes",
    "unknown_tool_effects_max_count": "max_unknown_effects",
    "useful_progress_min": "min_useful_progress",
    "tool_effect_integrity_min": "min_tool_effect_integrity",
    "cost_per_verified_outcome_max_usd": "max_cost_per_verified_outcome_usd",
    "quality_min": "min_quality",
}
_FILE_ONLY_KEYS = {
    "coverage",
    "interval_reporting",
    "gate_order",
    "rounding",
    # A Sherlock extension, as quality_min: the policy's requires_verified_outcomes.
    "verified_outcomes_required",
}
# The coverage states the file format may list; Sherlock's coverage rule is fixed,
# so a file that asks for something else is refused rather than silently reinterpreted.
_FILE_COVERAGE = {
    "declared_completion_needs_outcome_state": sorted(_OUTCOME_VERDICTS),
    "effectful_tool_attempt_needs_destination_state": sorted(_EFFECT_STATES),
    "cost_requires_billing_coverage": True,
}


def parse_thresholds(raw: Thresholds | Mapping[str, Any] | None) -> Thresholds:
    """Read thresholds from a policy's fields, a trial file's "thresholds" object, or None.

    ``None`` gives ``DEFAULT_THRESHOLDS``. A mapping is read as the policy format when it uses
    any of ``THRESHOLD_FIELDS`` and as the file format otherwise (see the module docstring for the
    mapping); mixing both, unknown keys or bad values raise ``ThresholdsError``.
    """
    if raw is None:
        return DEFAULT_THRESHOLDS
    if isinstance(raw, Thresholds):
        return raw
    if not isinstance(raw, Mapping):
        raise ThresholdsError(f"thresholds must be an object, not {json_type(raw)}")
    keys = set(raw)
    policy_keys = keys & set(THRESHOLD_FIELDS)
    file_keys = keys & (set(_FILE_FIELDS) | _FILE_ONLY_KEYS)
    if policy_keys and file_keys:
        raise ThresholdsError(
            "thresholds mix policy fields and file-format keys: "
            f"{', '.join(sorted(policy_keys))} / {', '.join(sorted(file_keys))}"
        )
    unknown = keys - set(THRESHOLD_FIELDS) - set(_FILE_FIELDS) - _FILE_ONLY_KEYS
    if unknown:
        raise ThresholdsError(f"unknown threshold key(s): {', '.join(sorted(unknown))}")
    if file_keys:
        return _thresholds_from_file(raw)
    return _thresholds_from_policy(raw)


def _flag(raw: Mapping[str, Any], name: str, default: bool) -> bool:
    value = raw.get(name, default)
    if not isinstance(value, bool):
        raise ThresholdsError(f"{name} must be true or false")
    return value


def _thresholds_from_policy(raw: Mapping[str, Any]) -> Thresholds:
    return Thresholds(
        **_read_limits(raw, file_format=False),
        coverage_required=_flag(raw, "coverage_required", True),
        requires_verified_outcomes=_flag(raw, "requires_verified_outcomes", False),
    )


def _thresholds_from_file(raw: Mapping[str, Any]) -> Thresholds:
    coverage = raw.get("coverage", {})
    if coverage is None or coverage is False:
        coverage_required = False
    elif isinstance(coverage, Mapping):
        for key, value in coverage.items():
            if key not in _FILE_COVERAGE:
                raise ThresholdsError(f"thresholds.coverage: unknown key '{key}'")
            expected = _FILE_COVERAGE[key]
            given = sorted(value) if isinstance(value, list) else value
            if given != expected:
                raise ThresholdsError(
                    f"thresholds.coverage.{key}: Sherlock's coverage rule is fixed "
                    f' to {json.dumps(expected)}; set "coverage": false '
                    "to turn the coverage gate off instead"
                )
        coverage_required = True
    else:
        raise ThresholdsError("thresholds.coverage must be an object, false or null")
    interval = raw.get("interval_reporting") or {}
    if not isinstance(interval, Mapping):
        raise ThresholdsError("thresholds.interval_reporting must be an object")
    min_n = interval.get("wilson_95_when_n_at_least", 30)
    if isinstance(min_n, bool) or not isinstance(min_n, int) or min_n < 1:
        raise ThresholdsError(
            "thresholds.interval_reporting.wilson_95_when_n_at_least must be a positive integer"
        )
    return Thresholds(
        **_read_limits(raw, file_format=True),
        coverage_required=coverage_required,
        wilson_min_n=min_n,
        requires_verified_outcomes=_flag(raw, "verified_outcomes_required", False),
    )


def _read_limits(raw: Mapping[str, Any], *, file_format: bool) -> dict[str, Any]:
    """The six limits of `raw` by their `Thresholds` field, each read by its kind (a count, a
    rate, money) under its policy name or its file-format key, which its errors name."""
    readers = {"max": _count_limit, "min": _rate_limit, "usd": _money_limit}
    limits = {}
    for file_key, field_name in _FILE_FIELDS.items():
        kind = "usd" if field_name.endswith("_usd") else field_name[:3]
        limits[field_name] = readers[kind](raw, file_key if file_format else field_name)
    return limits


def _limit_number(raw: Mapping[str, Any], name: str) -> Decimal | None:
    value = raw.get(name)
    if value is None:
        return None
    try:
        return _decimal(value, f"threshold '{name}'")
    except ValueError as exc:
        raise ThresholdsError(str(exc)) from None


def _count_limit(raw: Mapping[str, Any], name: str) -> int:
    # The false-success veto and the unknown-effects gate are hard gates: always stated.
    number = _limit_number(raw, name)
    if number is None:
        raise ThresholdsError(f"thresholds: missing required field '{name}'")
    if number != number.to_integral_value() or number < 0:
        raise ThresholdsError(f"threshold '{name}' must be a whole number >= 0")
    return int(number)


def _rate_limit(raw: Mapping[str, Any], name: str) -> Decimal | None:
    number = _limit_number(raw, name)
    if number is not None and not 0 <= number <= 1:
        raise ThresholdsError(f"threshold '{name}' must be between 0 and 1")
    return number


def _money_limit(raw: Mapping[str, Any], name: str) -> Decimal | None:
    number = _limit_number(raw, name)
    if number is not None and number < 0:
        raise ThresholdsError(f"threshold '{name}' must be >= 0")
    return number


# --- Trial records ---------------------------------------------------------------------------

_REQUIRED_TRIAL_FIELDS = (
    "trial_id",
    "variant",
    "declared_complete",
    "outcome",
    "quality",
    "progress",
    "tool_effects",
    "cost",
)


@dataclass(frozen=True)
class TrialRecord:
    """One trial record, checked and reduced to what the contract counts.

    ``outcome_verdict`` and each effect state are None when the record has no state (a
    coverage defect, not an input error). ``wait_owned`` is None when there is no wait.
    """

    trial_id: str
    variant: str
    declared_complete: bool
    outcome_verdict: str | None
    grader_ran: bool
    quality_score: Decimal | None
    active_windows: int
    windows_with_evidence_delta: int
    wait_windows: int
    stale_collector_windows: int
    wait_owned: bool | None
    effects: tuple[tuple[str | None, bool], ...]  # (state, intentionally_denied)
    cost_usd: Decimal | None
    billing_coverage: str


def read_trial(record: Any, where: str = "trial") -> TrialRecord:  # noqa: C901
    """Check one trial record and reduce it to a ``TrialRecord``.

    Raises ``TrialRecordError`` naming ``where`` (e.g. "trials[3]" or "line 4"), the trial id
    and the field. Absent *states* are not errors: ``outcome: null``, a missing verdict, an
    effect without ``state`` and ``cost: null`` are recorded as coverage defects, because
    the contract makes them fail the coverage gate rather than the import.
    """
    if not isinstance(record, Mapping):
        raise TrialRecordError(
            f"{where}: a trial record must be an object, not {json_type(record)}"
        )
    trial_id = record.get("trial_id")
    label = f"{where} (trial {trial_id!r})" if trial_id not in (None, "") else where

    def fail(message: str) -> TrialRecordError:
        return TrialRecordError(f"{label}: {message}")

    for name in _REQUIRED_TRIAL_FIELDS:
        if name not in record:
            raise fail(f"missing required field '{name}'")

    if isinstance(trial_id, bool) or not isinstance(trial_id, str | int) or trial_id == "":
        raise fail("'trial_id' must be a non-empty string")
    variant = record["variant"]
    if not isinstance(variant, str) or not variant.strip():
        raise fail("'variant' must be a non-empty string")
    declared_complete = record["declared_complete"]
    if not isinstance(declared_complete, bool):
        raise fail("'declared_complete' must be true or false")

    outcome = record["outcome"]
    if outcome is None:
        verdict = None
    elif isinstance(outcome, Mapping):
        verdict = outcome.get("verdict")
        if verdict is not None and verdict not in _OUTCOME_VERDICTS:
            raise fail(f"'outcome.verdict' must be one of {_choices(_OUTCOME_VERDICTS)} or null")
    else:
        raise fail("'outcome' must be an object or null")

    quality = record["quality"]
    grader_ran, score = False, None
    if quality is not None:
        if not isinstance(quality, Mapping):
            raise fail("'quality' must be an object or null")
        if "grader_ran" not in quality:
            raise fail("missing required field 'quality.grader_ran'")
        grader_ran = quality["grader_ran"]
        if not isinstance(grader_ran, bool):
            raise fail("'quality.grader_ran' must be true or false")
        raw_score = quality.get("score")
        if grader_ran:
            if raw_score is None:
                raise fail("'quality.score' is required when the grader ran")
            try:
                score = _decimal(raw_score, "'quality.score'")
            except ValueError as exc:
                raise fail(str(exc)) from None
            if not 0 <= score <= 1:
                raise fail("'quality.score' must be between 0 and 1")
        elif raw_score is not None:
            # A score without a grader run is a claim without evidence; refuse it rather than
            # guess whether it should count.
            raise fail("'quality.score' must be null when the grader did not run")

    progress = record["progress"]
    if not isinstance(progress, Mapping):
        raise fail("'progress' must be an object")
    windows = {}
    for name, required in (
        ("active_windows", True),
        ("windows_with_evidence_delta", True),
        ("excluded_wait_windows", False),
        ("stale_collector_windows", False),
    ):
        if name not in progress:
            if required:
                raise fail(f"missing required field 'progress.{name}'")
            windows[name] = 0
            continue
        value = progress[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(f"'progress.{name}' must be a whole number >= 0")
        if problem := COUNT.problem(value):
            raise fail(f"'progress.{name}' {problem}")
        windows[name] = value
    if windows["windows_with_evidence_delta"] > windows["active_windows"]:
        raise fail("'progress.windows_with_evidence_delta' exceeds 'progress.active_windows'")

    wait = record.get("wait")
    if wait is None:
        wait_owned = None
    elif isinstance(wait, Mapping):
        wait_owned = wait_is_owned(wait)
    else:
        raise fail("'wait' must be an object or null")

    tool_effects = record["tool_effects"]
    if not isinstance(tool_effects, list):
        raise fail("'tool_effects' must be an array")
    effects = []
    for position, effect in enumerate(tool_effects):
        if not isinstance(effect, Mapping):
            raise fail(f"'tool_effects[{position}]' must be an object")
        state = effect.get("state")
        if state is not None and state not in _EFFECT_STATES:
            raise fail(
                f"'tool_effects[{position}].state' must be one of "
                f"{_choices(_EFFECT_STATES)} or null"
            )
        denied = effect.get("intentionally_denied", False)
        if not isinstance(denied, bool):
            raise fail(f"'tool_effects[{position}].intentionally_denied' must be true or false")
        effects.append((state, denied))

    cost = record["cost"]
    usd, coverage = None, BillingCoverage.MISSING.value
    if cost is not None:
        if not isinstance(cost, Mapping):
            raise fail("'cost' must be an object or null")
        coverage = cost.get("billing_coverage") or BillingCoverage.MISSING.value
        if coverage not in _BILLING_COVERAGES:
            raise fail(f"'cost.billing_coverage' must be one of {_choices(_BILLING_COVERAGES)}")
        if cost.get("usd") is not None:
            try:
                usd = _decimal(cost["usd"], "'cost.usd'")
            except ValueError as exc:
                raise fail(str(exc)) from None
            if problem := USD.problem(usd):
                raise fail(f"'cost.usd' {problem}")
        if coverage == BillingCoverage.BILLED and usd is None:
            # "billed" without an amount is not billed cost: fail closed as missing.
            coverage = BillingCoverage.MISSING.value

    return TrialRecord(
        trial_id=str(trial_id),
        variant=variant,
        declared_complete=declared_complete,
        outcome_verdict=verdict,
        grader_ran=grader_ran,
        quality_score=score,
        active_windows=windows["active_windows"],
        windows_with_evidence_delta=windows["windows_with_evidence_delta"],
        wait_windows=windows["excluded_wait_windows"],
        stale_collector_windows=windows["stale_collector_windows"],
        wait_owned=wait_owned,
        effects=tuple(effects),
        cost_usd=usd,
        billing_coverage=str(coverage),
    )


def wait_is_owned(wait: Mapping[str, Any]) -> bool:
    """A wait is owned when it names an owner, the decision requested, a deadline
    and whether the run can resume. ``resumable: false`` still answers the question."""
    named = all(
        isinstance(wait.get(key), str) and wait[key].strip()
        for key in ("owner", "decision_requested", "deadline")
    )
    return named and isinstance(wait.get("resumable"), bool)


def _choices(values: Iterable[str]) -> str:
    return ", ".join(sorted(values))


# --- Trial files -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TrialDocument:
    """A parsed trial file: its thresholds (None when it has none), trials and their places."""

    thresholds: Mapping[str, Any] | None
    trials: list[Any]
    locations: list[str]


def _loads(text: str, line: int = 1) -> Any:
    """`text` read by the one strict JSON reader (`sherlock.core.json_text`), numbers with a
    fraction as Decimal (money and scores exact from the first byte); ContractInputError names
    the line and column of what it refuses, counted from `line` (JSON Lines: the line's own)."""
    try:
        return json_text.loads(text, floats=Decimal)
    except json_text.JSONRefused as exc:
        if exc.offset is None:
            raise ContractInputError(f"malformed JSON at line {line}: {exc.message}") from None
        at, column = json_text.line_and_column(text, exc.offset)
        raise ContractInputError(
            f"malformed JSON at line {line + at - 1}, column {column}: {exc.message}"
        ) from None


def load_document(text: str) -> TrialDocument:
    """Parse a trial file: ``{"thresholds": {...}, "trials": [...]}``, a JSON array of trials,
    or JSON Lines (one trial object per line). Raises ``ContractInputError`` with the line."""
    if not text.strip():
        raise ContractInputError("the file is empty")
    try:
        document = _loads(text)
    except ContractInputError:
        lines = _json_lines(text)
        if lines is None:
            raise
        return lines

    if isinstance(document, Mapping) and "trials" in document:
        trials = document["trials"]
        if not isinstance(trials, list):
            raise ContractInputError("'trials' must be an array")
        thresholds = document.get("thresholds")
        return TrialDocument(thresholds, trials, [f"trials[{i}]" for i in range(len(trials))])
    if isinstance(document, Mapping):  # JSON Lines with a single trial
        return TrialDocument(None, [document], ["line 1"])
    if isinstance(document, list):
        return TrialDocument(None, document, [f"trials[{i}]" for i in range(len(document))])
    raise ContractInputError("expected an object with 'trials', an array of trials or JSON Lines")


def _json_lines(text: str) -> TrialDocument | None:
    """Read ``text`` as JSON Lines, or return None when it does not look like JSON Lines (its
    first line is not a trial object), so the caller reports the whole-document error."""
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    first_number, first_line = numbered[0]
    try:
        first = _loads(first_line, first_number)
    except ContractInputError:
        return None
    if not isinstance(first, Mapping) or "trials" in first:
        return None
    trials, locations = [], []
    for number, line in numbered:
        trials.append(_loads(line, number))
        locations.append(f"line {number}")
    return TrialDocument(None, trials, locations)
