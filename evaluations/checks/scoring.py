"""The scoring rules (docs/checks.md), as pure functions.

- A check with a threshold passes when score >= threshold; without one it is `scored`: shown,
  never pretending to have passed.
- A case passes when all of its blocking checks pass. Skipped checks and checks in error do
  not count against it, and never for it either: a repetition is `failed` when a blocking
  check was scored and failed, `passed` when none failed, at least one was scored and none
  could not run, and `unscored` otherwise, with why (`UNSCORED_REASONS`). A check skipped
  because it does not apply to the case (no reference contexts, say) is not a failure to run;
  one skipped because no judge is configured is (docs/checks.md, "Case states").
- An informative check is scored and shown but never fails a case.
- With repetitions a check's score is the mean over repetitions; a case is `failed` if a
  repetition failed, `flaky` if some passed and some failed, `passed` only if every repetition
  passed, `unscored` otherwise (`case_state`).
- A case may override a check's threshold, params or mode, or disable it.

The engine calls `effective_check` and `check_status` per trial, and `summarize_case` once per
case when the run finishes; nothing here touches the database.
"""

from dataclasses import dataclass
from math import fsum
from typing import Any

from evaluations.choices import CaseStatus, CheckMode, CheckStatus


@dataclass(frozen=True)
class EffectiveCheck:
    """A check as it applies to one case, after that case's overrides."""

    label: str
    kind: str
    params: dict
    threshold: float | None
    mode: str
    disabled: bool

    @property
    def blocking(self):
        # A check disabled for this case is not blocking there: its `skipped` result must not
        # count as "could not be scored" in the release gate.
        return self.mode == CheckMode.BLOCKING and not self.disabled


def effective_check(check, overrides):
    """Apply a case's override for `check.label` (`{threshold, params, mode, disabled}`).

    Override params are merged over the check's params, so a case changes one field without
    restating the rest.
    """
    override = (overrides or {}).get(check.label) or {}
    params = {**(check.params or {}), **(override.get("params") or {})}
    threshold = override.get("threshold", check.threshold)
    return EffectiveCheck(
        label=check.label,
        kind=check.kind,
        params=params,
        threshold=threshold,
        mode=override.get("mode", check.mode),
        disabled=bool(override.get("disabled", False)),
    )


def check_status(score, outcome, threshold):
    """Turn a check's verdict into a status: `skipped` and `error` stay as they are; a score
    meets its threshold (>=) or not; no threshold means `scored`."""
    if outcome in (CheckStatus.SKIPPED, CheckStatus.ERROR):
        return outcome
    if score is None:
        return CheckStatus.ERROR
    if threshold is None:
        return CheckStatus.SCORED
    return CheckStatus.PASSED if score >= threshold else CheckStatus.FAILED


# Why a repetition was not scored, in the order a case names the first it met: the agent's
# call failed; a model check's judge did not answer (or none is configured); a check errored;
# no blocking check produced a verdict (all skipped as not applicable, or none blocks).
AGENT_ERROR = "agent error"
JUDGE_UNAVAILABLE = "judge unavailable"
CHECK_ERROR = "check error"
NOTHING_SCORED = "every blocking check skipped"
UNSCORED_REASONS = (AGENT_ERROR, JUDGE_UNAVAILABLE, CHECK_ERROR, NOTHING_SCORED)
# A skip that is a failure to run, not a case the check does not apply to.
NO_JUDGE_SKIP = "no judge configured"
_SCORED = (str(CheckStatus.PASSED), str(CheckStatus.SCORED))


def repetition_state(results, *, agent_error=False):
    """(state, reason) of one repetition: `results` are (status, blocking, model, reason)
    tuples (`model`: the check is judged by a model). `failed` when a blocking check failed;
    else `unscored` with its reason when the agent errored, a blocking check could not run or
    none was scored; else `passed`. Informative checks never decide it."""
    blocking = [
        (status, model, reason) for status, is_blocking, model, reason in results if is_blocking
    ]
    if any(status == CheckStatus.FAILED for status, _, _ in blocking):
        return CheckStatus.FAILED.value, ""
    if agent_error:
        return "unscored", AGENT_ERROR
    if any(
        (status == CheckStatus.ERROR and model)
        or (status == CheckStatus.SKIPPED and reason == NO_JUDGE_SKIP)
        for status, model, reason in blocking
    ):
        return "unscored", JUDGE_UNAVAILABLE
    if any(status == CheckStatus.ERROR for status, _, _ in blocking):
        return "unscored", CHECK_ERROR
    if not any(status in _SCORED for status, _, _ in blocking):
        return "unscored", NOTHING_SCORED
    return CheckStatus.PASSED.value, ""


def case_state(repetitions, passed, failed, unscored_reasons=()):
    """(status, reason) of a case from its repetitions' states: `passed` and `failed` counted,
    the rest unscored; `unscored_reasons` the reasons met, any order. `failed` if a repetition
    failed and none passed, `flaky` if some passed and some failed, `passed` only if every
    repetition passed, `unscored` otherwise, with the first reason of `UNSCORED_REASONS` met.
    The one rule: the engine stores it per case (`CaseResult.status`), every surface reads it."""
    if failed and passed:
        return CaseStatus.FLAKY.value, ""
    if failed:
        return CaseStatus.FAILED.value, ""
    if repetitions and passed == repetitions:
        return CaseStatus.PASSED.value, ""
    met = set(unscored_reasons)
    reason = next((r for r in UNSCORED_REASONS if r in met), NOTHING_SCORED)
    return CaseStatus.UNSCORED.value, reason


@dataclass
class CaseSummary:
    status: str
    reason: str
    repetitions: int
    repetitions_passed: int
    repetitions_unscored: int
    checks: dict

    @property
    def passed(self):
        return self.status == CaseStatus.PASSED

    @property
    def flaky(self):
        return self.status == CaseStatus.FLAKY


def summarize_case(repetitions):
    """Summarize one case over its repetitions.

    `repetitions` is a list (one item per repetition) of lists of dicts with keys `label`,
    `score`, `status`, `blocking` (and, when they apply, `model`: a model check; `reason`: the
    result's; `agent_error`: the agent's call failed). Returns the case's state
    (`case_state`) and per-check summary:
    the mean score over the repetitions that produced one, and the count of each status.
    `evaluations.engine.completion` computes the same from database aggregates, through the
    same `check_summary` and `case_state`.
    """
    states = [
        repetition_state(
            [
                (r["status"], r["blocking"], r.get("model", False), r.get("reason", ""))
                for r in results
            ],
            agent_error=any(r.get("agent_error") for r in results),
        )
        for results in repetitions
    ]
    checks: dict[Any, Any] = {}
    for results in repetitions:
        for r in results:
            entry = checks.setdefault(
                r["label"],
                {"scores": [], "statuses": {}, "blocking": r["blocking"]},
            )
            if r["score"] is not None:
                entry["scores"].append(r["score"])
            entry["statuses"][r["status"]] = entry["statuses"].get(r["status"], 0) + 1
    summary = {
        label: check_summary(
            entry["statuses"], fsum(entry["scores"]), len(entry["scores"]), entry["blocking"]
        )
        for label, entry in checks.items()
    }
    passed = sum(1 for state, _ in states if state == CaseStatus.PASSED)
    failed = sum(1 for state, _ in states if state == CaseStatus.FAILED)
    status, reason = case_state(len(states), passed, failed, [why for state, why in states if why])
    return CaseSummary(
        status=status,
        reason=reason,
        repetitions=len(states),
        repetitions_passed=passed,
        repetitions_unscored=len(states) - passed - failed,
        checks=summary,
    )


def check_summary(statuses, score_sum, n_scored, blocking):
    """One check's summary over a case's repetitions, from its counts: `statuses` (status ->
    count, the statuses seen), the sum of its `n_scored` scores, and whether it blocks. The
    mean is over the repetitions that produced a score (None when none did)."""
    return {
        "mean": round(score_sum / n_scored, 6) if n_scored else None,
        "n_scored": n_scored,
        "statuses": statuses,
        "blocking": blocking,
        "status": _overall_status(statuses),
        # A check that passed in some repetitions and failed in others: intermittent.
        "flaky": bool(statuses.get(_PASSED) and statuses.get(_FAILED)),
    }


# As plain strings: an enum member hashes in Python, and a run's end summarises every case.
_PASSED, _FAILED = str(CheckStatus.PASSED), str(CheckStatus.FAILED)
_PRECEDENCE = tuple(
    str(status)
    for status in (
        CheckStatus.FAILED,
        CheckStatus.PASSED,
        CheckStatus.SCORED,
        CheckStatus.ERROR,
        CheckStatus.SKIPPED,
    )
)


def _overall_status(statuses):
    """One status for a check over repetitions: failed if any repetition failed, else passed if
    any passed, else scored, else error, else skipped."""
    for status in _PRECEDENCE:
        if statuses.get(status):
            return status
    return _PRECEDENCE[-1]
