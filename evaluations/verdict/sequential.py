"""A run that stops early, read in its seed's order: its gates decided case by case, valid
however often they are looked at (`evaluations.stats.SequentialGate`). The engine asks while
the run runs and stops it once they are decided (evaluations.engine.stopping); the verdict asks
again of the finished run: one rule for both. docs/contract.md, "Stopping early".

The gates read the cases in the order the run's seed drew them, up to the first one not
finished: a case finished out of order waits its turn, so what they see never depends on which
calls happened to end first. A case without a verdict (unscored) is passed over: it says
nothing of the rate (the "blocking checks scored" gate counts it). On the interval the case pass
rate is tested by betting at the policy's confidence; on the point estimate it is decided only
once no outcome of the cases left could change it (at the end, unless failures or passes make
it certain before). The paired gate against live bets on each pair's difference.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from evaluations.choices import CaseStatus
from evaluations.models import CaseResult, CaseVersion
from evaluations.stats import INSUFFICIENT, SequentialGate
from evaluations.stats.decide import FAIL, PASS

ON_INTERVAL = "interval"
WITH_VERDICT = (CaseStatus.PASSED, CaseStatus.FAILED, CaseStatus.FLAKY)


def seeded_order(case_ids: Iterable[int], seed: int) -> list[int]:
    """The cases' ids in the order `seed` draws them (the same on every machine and version)."""
    order = sorted(case_ids)
    random.Random(seed).shuffle(order)
    return order


@dataclass(frozen=True)
class Step:
    """One case in seed order: its id, key and status (None: not finished, or never run)."""

    case_id: int
    key: str
    status: str | None


@dataclass(frozen=True)
class Decided:
    """A gate read in seed order: its `decision`, the cases read (`seen`, up to the first not
    finished), of them those with a verdict (`judged`) and their `passed` sum, the run's
    `cases`, and `at`: how many had been read when it was decided (None: undecided)."""

    decision: str
    seen: int
    judged: int
    passed: float
    cases: int
    at: int | None


def prefix(steps: Sequence[Step]) -> list[Step]:
    """The steps up to the first not finished."""
    done = []
    for step in steps:
        if step.status is None:
            break
        done.append(step)
    return done


def decide_rate(
    steps: Sequence[Step], minimum: float, decides_on: str, confidence: float
) -> Decided:
    """The case pass rate gate over `steps` in order (module docstring)."""
    done, total = prefix(steps), len(steps)
    gate = SequentialGate(minimum, confidence)
    passed = failed = unscored = 0
    at = None
    for seen, step in enumerate(done, start=1):
        if step.status not in WITH_VERDICT:
            unscored += 1
            continue
        passed += step.status == CaseStatus.PASSED
        failed += step.status != CaseStatus.PASSED
        if decides_on == ON_INTERVAL:
            decision = gate.add(step.status == CaseStatus.PASSED)
        else:
            decision = _certain(passed, failed, total - seen, minimum)
        if decision != INSUFFICIENT:
            at = seen
            break
    else:
        decision = INSUFFICIENT
        if decides_on != ON_INTERVAL and len(done) == total:  # every case read: the rate is
            decision = _certain(passed, failed, 0, minimum) if passed + failed else INSUFFICIENT
            at = total if decision != INSUFFICIENT else None
    return Decided(decision, at or len(done), passed + failed, passed, total, at)


def _certain(passed: int, failed: int, left: int, minimum: float) -> str:
    """Pass when the rate clears `minimum` even if every case left fails, fail when it misses
    it even if they all pass (a case left unscored moves the rate between the two)."""
    if passed / (passed + failed + left) >= minimum:
        return PASS
    if (passed + left) / (passed + failed + left) < minimum:
        return FAIL
    return INSUFFICIENT


def decide_pairs(
    steps: Sequence[Step], live: dict[str, bool], margin: float, confidence: float
) -> Decided:
    """No regression beyond `margin` against the live run's case outcomes `live` (case key ->
    passed), over `steps` in order: each case with a verdict in both adds its difference d in
    {-1, 0, 1}, shifted to (d + 1) / 2, tested against (1 - margin) / 2."""
    done = prefix(steps)
    gate = SequentialGate((1 - margin) / 2, confidence)
    judged, total, at = 0, 0.0, None
    for seen, step in enumerate(done, start=1):
        if step.status not in WITH_VERDICT or step.key not in live:
            continue
        difference = int(step.status == CaseStatus.PASSED) - int(live[step.key])
        judged, total = judged + 1, total + difference
        if gate.add((difference + 1) / 2) != INSUFFICIENT:
            at = seen
            break
    return Decided(gate.decision, at or len(done), judged, total, len(steps), at)


def finished_sequences(runs: Iterable) -> dict[int, list[Step]]:
    """``{run pk: [Step]}`` of the runs that stop early, their cases in seed order with their
    case results' statuses (None: never run); two queries for any number of runs."""
    runs = [run for run in runs if run.stop_early and run.seed is not None]
    if not runs:
        return {}
    cases: dict[int, dict[int, str]] = {}
    for version, case_id, key in CaseVersion.objects.filter(
        dataset_version_id__in={run.dataset_version_id for run in runs}
    ).values_list("dataset_version_id", "case_id", "case__key"):
        cases.setdefault(version, {})[case_id] = key
    statuses: dict[int, dict[int, str]] = {run.pk: {} for run in runs}
    for run_id, case_id, status in CaseResult.objects.filter(run_id__in=list(statuses)).values_list(
        "run_id", "case_id", "status"
    ):
        statuses[run_id][case_id] = status
    return {
        run.pk: steps_of(cases.get(run.dataset_version_id, {}), statuses[run.pk], run.seed)
        for run in runs
    }


def steps_of(keys: Mapping[int, str], statuses: Mapping[int, str | None], seed: int) -> list[Step]:
    """The run's cases (id -> key) in `seed` order, each with its status in `statuses`."""
    return [Step(pk, keys[pk], statuses.get(pk)) for pk in seeded_order(keys, seed)]


def words(found: Decided, what: str = "cases") -> str:
    """How a person reads it: "decided after 212 of 1000 cases in seed order" or "undecided
    after ..."."""
    if found.at is not None:
        return f"decided after {found.at} of {found.cases} {what} in seed order"
    return f"undecided after {found.seen} of {found.cases} {what} in seed order"


def stopped_words(run) -> str:
    """What a run that stopped early says of it ("" for any other run): how many trials never
    ran, and why it stopped."""
    record = run.sequential or {}
    if not record:
        return ""
    gates = [found for found in record.get("gates", {}).values() if found]
    why = (
        "a gate failed"
        if any(found["decision"] == FAIL for found in gates)
        else "every gate was decided"
    )
    return (
        f"stopped early (seed {run.seed}): {why}; {record.get('trials_not_run', 0)} trial(s) "
        "never ran"
    )
