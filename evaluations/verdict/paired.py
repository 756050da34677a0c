"""The candidate against the live version, case by case: the runs of the live version it is
paired with (`live_runs`), their cases side by side (`pair_cases`), and the non-inferiority gate
"no regression against live" a policy with a margin adds (`regression_gate`).

Each candidate run is paired with the live version's run on the same frozen dataset version:
the cases with a verdict in both runs, passed or not in each. The difference of the pass rates
(candidate minus live) has Tango's paired interval at the policy's confidence
(`evaluations.stats.paired_comparison`); the gate passes when the whole interval is above minus
the margin, fails when the whole interval is below it, and otherwise has insufficient evidence.
McNemar's exact test on the discordant cases stands beside it. docs/contract.md, "Paired
against the live version".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evaluations.choices import CaseStatus, RunPurpose, RunStatus
from evaluations.contract import NOT_APPLICABLE
from evaluations.models import CaseResult, Run
from evaluations.stats import INSUFFICIENT, Paired, decide_on_interval, paired_comparison
from evaluations.stats.decide import FAIL, PASS, VERBS
from evaluations.verdict.model import POLICY_GATE_LABELS, Gate
from evaluations.verdict.sequential import decide_pairs, words

DECIDED = (CaseStatus.PASSED, CaseStatus.FAILED, CaseStatus.FLAKY)
SHOWN_DISCORDANT = 100  # the discordant cases a gate's value lists, regressions first


def live_runs(runs: Iterable[Run]) -> dict[int, Run | None]:
    """``{run pk: the live version's latest completed run on the same dataset version, or
    None}`` for each of ``runs`` whose agent has a live version other than the run's own (the
    others are left out). Imported trials have no case verdicts and never pair. One query
    whatever the number of runs; reads ``run.agent_version.agent``."""
    runs = list(runs)
    wanted = {
        (run.agent_version.agent.live_version_id, run.dataset_version_id)
        for run in runs
        if run.agent_version.agent.live_version_id not in (None, run.agent_version_id)
    }
    found: dict[tuple[int, int], Run] = {}
    if wanted:
        candidates = (
            Run.objects.filter(
                agent_version_id__in={version for version, _ in wanted},
                dataset_version_id__in={dataset for _, dataset in wanted},
                status=RunStatus.COMPLETED,
            )
            .exclude(purpose=RunPurpose.EXTERNAL)
            .order_by("-pk")
        )
        for run in candidates:
            found.setdefault((run.agent_version_id, run.dataset_version_id), run)
    paired = {}
    for run in runs:
        live = run.agent_version.agent.live_version_id
        if live is not None and live != run.agent_version_id:
            paired[run.pk] = found.get((live, run.dataset_version_id))
    return paired


@dataclass(frozen=True)
class PairedCases:
    """The cases with a verdict in both runs of each pair, as two aligned lists of outcomes,
    and the discordant ones: ``{key, candidate_run, live_run, candidate_passed}``."""

    candidate: list[bool]
    live: list[bool]
    discordant: list[dict[str, Any]]


def case_outcomes(run_ids: Iterable[int]) -> dict[int, dict[str, bool]]:
    """``{run pk: {case key: passed}}`` of the cases with a verdict (passed, or failed or
    flaky) in each of ``run_ids``: one query for any number of runs."""
    ids = set(run_ids)
    outcome: dict[int, dict[str, bool]] = {pk: {} for pk in ids}
    rows = CaseResult.objects.filter(run_id__in=ids, status__in=DECIDED).values_list(
        "run_id", "case__key", "status"
    )
    for run_id, key, status in rows:
        outcome[run_id][key] = status == CaseStatus.PASSED
    return outcome


def pair_cases(pairs: Sequence[tuple[Run, Run]], outcome=None) -> PairedCases:
    """The cases of each (candidate run, live run) pair with a verdict in both (passed, or
    failed or flaky), from ``outcome`` (`case_outcomes`, read here in one query when not
    given); the discordant ones listed regressions first."""
    if outcome is None:
        outcome = case_outcomes(run.pk for pair in pairs for run in pair)
    candidate, live, discordant = [], [], []
    for new, old in pairs:
        mine, theirs = outcome[new.pk], outcome[old.pk]
        for key in sorted(set(mine) & set(theirs)):
            candidate.append(mine[key])
            live.append(theirs[key])
            if mine[key] != theirs[key]:
                discordant.append(
                    {
                        "key": key,
                        "candidate_run": new.pk,
                        "live_run": old.pk,
                        "candidate_passed": mine[key],
                    }
                )
    discordant.sort(key=lambda row: (row["candidate_passed"], row["key"]))
    return PairedCases(candidate, live, discordant)


def regression_gate(
    pairs: Sequence[tuple[Run, Run | None]],
    margin: float,
    confidence: float,
    *,
    publishing: bool = False,
    outcome=None,
    sequences: dict | None = None,
) -> Gate:
    """The non-inferiority gate: the candidate's pass rate, paired with the live version's on
    the same cases, must not be lower by more than ``margin`` (module docstring). ``pairs``:
    each candidate run with the live version's run (None: it has none on that dataset
    version); no pair, no live version: not applicable. Insufficient evidence when a live run
    did not complete or no case has a verdict in both, and, when `publishing` (the publish
    gate, which starts the live runs it needs), when one is missing; a run judged alone with
    no live run to pair with is not applicable, and says so. ``outcome``: the runs' case
    outcomes (`case_outcomes`) when read for many verdicts at once. A candidate run that
    stops early (in ``sequences``) is read pair by pair in its seed's order
    (`evaluations.verdict.sequential.decide_pairs`)."""
    label = POLICY_GATE_LABELS["regression"]
    bound = {"max_regression": margin, "confidence": confidence}
    pairs = list(pairs)
    if not pairs:
        detail = "no live version to pair with (none is live, or this is it)"
        return Gate("regression", label, NOT_APPLICABLE, detail, {"paired": None}, bound)
    unfinished = [
        f"live run #{live.pk} is {live.status}"
        for _, live in pairs
        if live is not None and live.status != RunStatus.COMPLETED
    ]
    missing = [f"no live run on {run.dataset_version}" for run, live in pairs if live is None]
    if missing and not publishing:
        detail = (
            f"the live version has no completed run on {pairs[0][0].dataset_version} to pair "
            "with (the publish gate runs one beside the gate runs)"
        )
        return Gate("regression", label, NOT_APPLICABLE, detail, {"paired": None}, bound)
    if unfinished or missing:
        detail = "; ".join([*unfinished, *missing]) + ": nothing to pair with"
        return Gate("regression", label, INSUFFICIENT, detail, {"paired": None}, bound)
    complete = [(run, live) for run, live in pairs if live is not None]
    if sequences and any(run.pk in sequences for run, _ in complete):
        return _in_seed_order(complete, margin, confidence, outcome, sequences)
    cases = pair_cases(complete, outcome)
    if not cases.candidate:
        detail = "no case has a verdict in both the candidate's and the live version's run"
        return Gate("regression", label, INSUFFICIENT, detail, {"paired": None}, bound)
    paired = paired_comparison(cases.candidate, cases.live, confidence)
    state = decide_on_interval(paired, -margin)
    return Gate(
        "regression",
        label,
        state,
        _detail(paired, margin, state),
        {
            "paired": _paired_value(paired),
            "candidate_runs": [run.pk for run, _ in complete],
            "live_runs": [live.pk for _, live in complete],
            "discordant": cases.discordant[:SHOWN_DISCORDANT],
        },
        bound,
    )


def _in_seed_order(complete: list, margin: float, confidence: float, outcome, sequences) -> Gate:
    """The gate with each candidate run that stops early read pair by pair in seed order, the
    others on their paired interval; any fail fails, else any undecided is insufficient."""
    if outcome is None:
        outcome = case_outcomes({pk for pair in complete for pk in (pair[0].pk, pair[1].pk)})
    states, parts, rows = [], [], []
    for run, live in complete:
        if run.pk in sequences:
            found = decide_pairs(sequences[run.pk], outcome[live.pk], margin, confidence)
            state = found.decision
            parts.append(
                f"run #{run.pk} against live run #{live.pk}: difference {found.passed:+.0f} "
                f"over {found.judged} paired cases, {words(found, 'cases')} (tested pair by "
                f"pair at {confidence:.0%}): {state} against -{margin}"
            )
            rows.append({"run": run.pk, "live_run": live.pk, "decision": state, "at": found.at})
        else:
            gate = regression_gate([(run, live)], margin, confidence, outcome=outcome)
            state = gate.state
            parts.append(f"run #{run.pk}: {gate.detail}")
            rows.append({"run": run.pk, "live_run": live.pk, "decision": state, "at": None})
        states.append(state)
    state = FAIL if FAIL in states else INSUFFICIENT if INSUFFICIENT in states else PASS
    return Gate(
        "regression",
        POLICY_GATE_LABELS["regression"],
        state,
        "; ".join(parts),
        {
            "paired": None,
            "in_seed_order": rows,
            "candidate_runs": [run.pk for run, _ in complete],
            "live_runs": [live.pk for _, live in complete],
            "discordant": pair_cases(complete, outcome).discordant[:SHOWN_DISCORDANT],
        },
        {"max_regression": margin, "confidence": confidence},
    )


def _detail(paired: Paired, margin: float, state: str) -> str:
    return (
        f"{paired.cases} paired cases: {paired.only_live} passed only on live, "
        f"{paired.only_candidate} only on the candidate; difference {paired.difference:+.3f}, "
        f"{paired.confidence:.0%} interval {paired.low:+.3f} to {paired.high:+.3f} {VERBS[state]} "
        f"-{margin} (McNemar p = {paired.mcnemar_p:.3g})"
    )


def _paired_value(paired: Paired) -> dict[str, Any]:
    return {
        "cases": paired.cases,
        "both": paired.both,
        "only_candidate": paired.only_candidate,
        "only_live": paired.only_live,
        "neither": paired.neither,
        "difference": round(paired.difference, 6),
        "interval": [round(paired.low, 6), round(paired.high, 6)],
        "mcnemar_p": round(paired.mcnemar_p, 6),
    }
