"""A finished run's verdict: PASSED or FAILED, and why, the same on the run page and the list.

`run_verdict(run, contract, unscored)` is the one rule: a run failed when it did not complete,
when a case failed, when the five-metric contract of DESIGN section 6 fails (naming the first
failing gate, whatever the cases say), or when blocking checks went unscored (the release
decision fails closed on those: ``checks_scored``, DESIGN section 10.5). It gives each reason
in full, for the run page's banner ("13 of 16 cases failed; the contract fails at coverage"),
and in short, for a table cell ("13/16 cases failed", "contract: coverage").

`list_verdicts(runs)` is that verdict for every finished run of the run list, under the same
thresholds as the run page (the publishing policy in force for each run's agent, through
`evaluations.contract.applied`). Computing each row's contract the way the run page does
would cost queries per row, so it is built from what a run stores when it finishes
(`Run.summary` for the cases; `Run.figures` for the contract's totals of its trials and its
unscored blocking results, `evaluations.reads.figures`) plus a constant number of queries for all
the rows: one to the thresholds provider, one grouped query for the judge spend bound to no
trial (which may still be recorded after the run finished, `runs_totals`), and, only when a
row has no stored figures (a run that finished before figures existed), four grouped
aggregates for those rows. The contract itself is `evaluate` of those totals, the function the
run page's `run_contract` calls, so the two cannot disagree.
"""

from evaluations.choices import RUN_TERMINAL, RunStatus
from evaluations.contract import GATE_LABELS, applied_thresholds, evaluate
from evaluations.contract.db import runs_totals, unscored_blocking


def run_verdict(run, contract, unscored=0):
    """The run's verdict, told first: ``{"passed", "reasons", "short", "first_gate"}``.

    ``reasons`` are the full sentences of the run page, ``short`` the same reasons in a few
    words for the run list; ``contract`` is the run's `ContractResult` (None: not evaluated)
    and ``unscored`` its number of blocking check results skipped or in error."""
    summary = run.summary or {}
    reasons, short = [], []
    if run.status != RunStatus.COMPLETED:
        reasons.append(f"the run {run.status}")
        short.append(f"run {run.status}")
    cases, passed = summary.get("cases"), summary.get("passed")
    if cases and passed is not None and passed < cases:
        reasons.append(f"{cases - passed} of {cases} cases failed")
        short.append(f"{cases - passed}/{cases} cases failed")
    first = contract.first_failing_gate if contract else None
    if first:
        reasons.append(f"the contract fails at {GATE_LABELS[first]}")
        short.append(f"contract: {GATE_LABELS[first]}")
    if unscored:
        plural = "s" if unscored > 1 else ""
        reasons.append(f"{unscored} blocking check result{plural} not scored")
        short.append(f"{unscored} blocking result{plural} unscored")
    return {"passed": not reasons, "reasons": reasons, "short": short, "first_gate": first}


def list_verdicts(runs):
    """``{run pk: run_verdict}`` of the finished runs among ``runs`` (an unfinished run has no
    verdict yet: numbers from it are not evidence, DESIGN section 10). Reads
    ``run.agent_version.agent`` (select it with the runs); a constant number of queries
    whatever the number of runs (see the module docstring)."""
    finished = [run for run in runs if run.status in RUN_TERMINAL]
    if not finished:
        return {}
    applied = applied_thresholds(run.agent_version.agent for run in finished)
    totals = runs_totals(finished)
    unscored = unscored_blocking(finished)
    return {
        run.pk: run_verdict(
            run,
            evaluate(totals[run.pk], applied[run.agent_version.agent_id].thresholds),
            unscored.get(run.pk, 0),
        )
        for run in finished
    }
