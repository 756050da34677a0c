"""The scoring rules of seeds 000-002 (DESIGN section 5), as pure functions.

- A check with a threshold passes when score >= threshold; without one it is `scored`: shown,
  never pretending to have passed.
- A case passes when all of its blocking checks pass. Skipped checks and checks in error do
  not count against it (they are shown, and counted in coverage).
- An informative check is scored and shown but never fails a case.
- With repetitions a check's score is the mean over repetitions, the case passes only if every
  repetition passes, and a case that passed some repetitions and failed others is flaky.
- A case may override a check's threshold, params or mode, or disable it.

The engine calls `effective_check` and `check_status` per trial, and `summarize_case` once per
case when the run finishes; nothing here touches the database.
"""

from dataclasses import dataclass
from math import fsum

from evaluations.choices import CheckMode, CheckStatus


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


def repetition_passed(results):
    """Did one repetition of a case pass? `results` are (status, blocking) pairs.

    Only a blocking check that failed fails it: informative checks never do, and skipped,
    error and scored (no threshold) results do not count against the case.
    """
    return not any(blocking and status == CheckStatus.FAILED for status, blocking in results)


@dataclass
class CaseSummary:
    passed: bool
    flaky: bool
    repetitions: int
    repetitions_passed: int
    checks: dict


def summarize_case(repetitions):
    """Summarize one case over its repetitions.

    `repetitions` is a list (one item per repetition) of lists of dicts with keys `label`,
    `score`, `status`, `blocking`. Returns the case's pass, flakiness and per-check summary:
    the mean score over the repetitions that produced one, and the count of each status.
    `evaluations.engine.completion` computes the same from database aggregates, through the
    same `check_summary` and `case_verdict`.
    """
    passed_flags = [
        repetition_passed([(r["status"], r["blocking"]) for r in results])
        for results in repetitions
    ]
    checks = {}
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
    passed, flaky = case_verdict(len(passed_flags), sum(passed_flags))
    return CaseSummary(
        passed=passed,
        flaky=flaky,
        repetitions=len(passed_flags),
        repetitions_passed=sum(passed_flags),
        checks=summary,
    )


def case_verdict(repetitions, repetitions_passed):
    """(passed, flaky) of a case that passed `repetitions_passed` of its `repetitions`: it
    passes only if every repetition passed; it is flaky when some passed and some failed."""
    return (
        repetitions > 0 and repetitions_passed == repetitions,
        0 < repetitions_passed < repetitions,
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
