"""The release decision: a version's gate runs under a publishing policy, as a stored snapshot.

This module is the decision's one home. `make_decision(publish_request)` reads the request's
gate runs, applies its policy and returns the snapshot the request stores (and a bypass is
bound to); everything else (the request's state, publish, bypass, the `gate` command, the API,
the publish page) reads the snapshot through `release_of` and `gate_rows`.

How a policy is applied, in order:

1. `policy_thresholds(policy)`: a `PublishingPolicy`'s contract limits as the contract's plain
   `Thresholds`, read once (`evaluations.contract.parse_thresholds`). This is the only place a
   policy becomes thresholds: the decision and `in_force_thresholds` (what the run page, the
   compare page and API and `manage.py evaluate` show a run under) both go through it, so no
   surface reads another verdict than the gate's.
2. `decide(runs, policy)`: the contract of the runs' trials together
   (`evaluations.contract.db.runs_contract`, from the runs' stored figures), every gate of
   seed 003 in its fixed order with its numbers and threshold, then the checks-scored gate
   (DESIGN section 10.5) and the policy's `min_case_pass_rate`; the first failing gate and the
   `release` verdict. It fails closed: no run, a run that did not complete, or a number that
   cannot be computed fails its gate; nothing passes by default.

What may happen next to a version once it has a decision (publish, ask again, bypass) is
`governance.next_step`; the action that carries it out is `governance.actions.publish_version`.
`PASS`/`FAIL`/`NOT_APPLICABLE` are the contract's statuses (`evaluations.contract`).
"""

from decimal import Decimal
from typing import Any

from django.utils import timezone

from evaluations.calibration import informative_checks
from evaluations.choices import RunStatus
from evaluations.contract import (
    FAIL,
    GATE_LABELS,
    GATE_ORDER,
    NOT_APPLICABLE,
    PASS,
    POLICY_FIELDS,
    AppliedThresholds,
    ContractResult,
    Thresholds,
    parse_thresholds,
)
from evaluations.contract.db import runs_contract, trials_in_error, unscored_blocking
from governance.models import PublishingPolicy

__all__ = [
    "FAIL",
    "PASS",
    "decide",
    "gate_rows",
    "in_force_thresholds",
    "make_decision",
    "policy_thresholds",
    "policy_values",
    "release_of",
]


def policy_values(policy: PublishingPolicy) -> dict[str, Any]:
    """The contract limits of `policy` as its columns hold them (recorded in the snapshot): the
    columns named by the contract's own list, `POLICY_FIELDS`, which the policy verbs edit too
    (`governance.actions.policy_fields`)."""
    return {name: getattr(policy, name) for name in POLICY_FIELDS}


def policy_thresholds(policy: PublishingPolicy) -> Thresholds:
    """The contract `Thresholds` of `policy`: its limits read once, as the contract reads
    plain limits (`parse_thresholds`)."""
    return parse_thresholds(policy_values(policy))


def in_force_thresholds(agents):
    """`{agent pk: AppliedThresholds}` of the policy that would govern publishing each of
    `agents` now (`PublishingPolicy.objects.in_force_for_agents`, in one query); an agent no
    policy governs is left out (seed 003's defaults apply to it).

    This is the provider of `evaluations.contract.applied` (registered in
    `GovernanceConfig.ready`), the one documented hook through which the pages and commands of
    evaluations show a run under the policy in force without importing governance."""
    in_force = PublishingPolicy.objects.in_force_for_agents(agents)
    return {
        pk: AppliedThresholds(
            policy_thresholds(policy),
            policy_id=policy.pk,
            policy_name=policy.name,
            policy_version=policy.version,
            scope="global" if policy.agent_id is None else "agent",
        )
        for pk, policy in in_force.items()
        if policy is not None
    }


def make_decision(publish_request):
    """The decision snapshot for `publish_request`: gates, first failing gate, release verdict,
    the runs, the policy version and the checks that counted as informative (with why),
    stamped with the config hash it was made for."""
    runs = publish_request.runs.select_related("dataset_version__dataset", "agent_version__agent")
    runs = list(runs.order_by("pk"))
    decision = decide(runs, publish_request.policy)
    # Issue 13: which checks did not block (mode, calibration, overrides) and why.
    decision["informative_checks"] = informative_checks(runs)
    decision["config_hash"] = publish_request.config_hash
    decision["decided_at"] = timezone.now().isoformat()
    return decision


def decide(runs, policy: PublishingPolicy) -> dict[str, Any]:
    """The release decision of `runs` (one agent version's gate runs) under `policy`.

    Returns a JSON-ready snapshot: `policy`, `runs`, `measures` (the contract over all the
    runs' trials, as `ContractResult.as_dict`), `gates` (a list in the fixed order: coverage,
    false_success, unknown_effects, floors, budget, quality, then checks_scored and
    case_pass_rate; each `{name, label, status, detail, value, threshold}`),
    `first_failing_gate` and `release` (`pass` or `fail`). Every gate is evaluated even after
    one fails (seed 003). Reads `run.dataset_version.dataset` (select it with the runs).
    """
    runs = list(runs)
    limits = policy_thresholds(policy)
    result = runs_contract(runs, limits)

    versions = {run.agent_version_id for run in runs}
    incomplete = [run.pk for run in runs if run.status != RunStatus.COMPLETED]
    gates = [_gate_snapshot(result, name, limits) for name in GATE_ORDER]
    coverage = gates[0]
    problems = []
    if not runs:
        problems.append("no gate run")
    if incomplete:
        problems.append(f"run(s) {', '.join(f'#{pk}' for pk in incomplete)} did not complete")
    waiting = [run.pk for run in runs if run.status == RunStatus.WAITING]
    if waiting:
        # A client version's gate runs are fulfilled by its client (docs/client.md).
        problems.append(
            f"run(s) {', '.join(f'#{pk}' for pk in waiting)} waiting for the client "
            "(`sherlock run`)"
        )
    if len(versions) > 1:
        problems.append("the runs are of more than one agent version")
    if problems:
        # Fail closed (DESIGN section 10): numbers from unfinished runs are not evidence.
        coverage["status"] = FAIL
        coverage["detail"] = "; ".join([*problems, coverage["detail"]])
    coverage["value"]["incomplete_runs"] = incomplete
    gates.append(_checks_scored_gate(runs))
    gates.append(_case_pass_rate_gate(runs, policy.min_case_pass_rate))

    first = next((gate["name"] for gate in gates if gate["status"] == FAIL), None)
    return {
        "policy": {
            "id": policy.pk,
            "name": policy.name,
            "scope": policy.scope_key,
            "version": policy.version,
            "enforcement": policy.enforcement,
            "thresholds": {k: _json(v) for k, v in policy_values(policy).items()},
            "min_case_pass_rate": policy.min_case_pass_rate,
        },
        "runs": [
            {
                "id": run.pk,
                "dataset": run.dataset_version.dataset.slug,
                "dataset_version": run.dataset_version.number,
                "status": run.status,
                "repetitions": run.repetitions,
                "summary": run.summary or {},
            }
            for run in runs
        ],
        "measures": result.as_dict(),
        "gates": gates,
        "first_failing_gate": first,
        "release": FAIL if first else PASS,
    }


def release_of(decision):
    """ "pass" or "fail" for a stored snapshot; anything unreadable is a fail (fail closed)."""
    return PASS if (decision or {}).get("release") == PASS else FAIL


def gate_rows(decision):
    """The gates of a snapshot as (name, status, detail) rows, for tables and the CLI."""
    gates = (decision or {}).get("gates") or []
    return [(g.get("name", "?"), g.get("status", FAIL), g.get("detail", "")) for g in gates]


# --- The snapshot's gates ---------------------------------------------------------------------


def _json(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value


def _ratio(ratio) -> dict[str, Any]:
    return {
        "num": ratio.num,
        "den": ratio.den,
        "wilson95": list(ratio.wilson95) if ratio.wilson95 else None,
    }


def _gate_snapshot(result: ContractResult, name: str, limits: Thresholds) -> dict[str, Any]:
    """One contract gate with the numbers it read and the threshold it applied."""
    t = result.totals
    gate = next((g for g in result.gates if g.name == name), None)
    snapshot = {"name": name, "label": GATE_LABELS[name]}
    value: dict[str, Any]
    threshold: dict[str, Any]
    if name == "coverage":
        value = {
            "completions_without_outcome": t.completions_without_outcome,
            "effects_without_state": t.effects_without_state,
            "estimated_cost_trials": t.estimated_runs,
            "missing_cost_trials": t.missing_cost_runs,
            "unpriced_judge_calls": t.unpriced_judge_calls,
        }
        threshold = {"required": limits.coverage_required}
    elif name == "false_success":
        value = {
            **_ratio(result.false_success),
            "unverified_completions": result.unverified_completions,
        }
        threshold = {"max": limits.max_false_successes}
    elif name == "unknown_effects":
        value = {"count": t.effects_unknown, "intentionally_denied": t.effects_denied}
        threshold = {"max": limits.max_unknown_effects}
    elif name == "floors":
        parts = dict(gate.parts) if gate is not None else {}
        value = {
            "useful_progress": {
                **_ratio(result.useful_progress),
                "status": parts["useful_progress"],
                "excluded_wait_windows": result.excluded_wait_windows,
                "stalled_wait_windows": result.stalled_wait_windows,
                "stale_collector_windows": result.stale_collector_windows,
            },
            "tool_effect_integrity": {
                **_ratio(result.tool_effect_integrity),
                "status": parts["tool_effect_integrity"],
                "intentionally_denied": result.intentionally_denied,
            },
        }
        threshold = {
            "min_useful_progress": _json(limits.min_useful_progress),
            "min_tool_effect_integrity": _json(limits.min_tool_effect_integrity),
        }
    elif name == "budget":
        value = {
            "cost_per_verified_outcome_usd": _json(result.cost_per_verified_outcome_usd),
            "verified_outcomes": result.verified_outcomes,
            "covered_usd": _json(result.billed_usd),
            "cost_per_run_usd": _json(result.cost_per_run_usd),
            "estimated_usd": _json(result.estimated_usd),
        }
        threshold = {"max": _json(limits.max_cost_per_verified_outcome_usd)}
    else:  # quality
        value = {"mean": _json(result.quality_mean), "graded": result.graded}
        threshold = {"min": _json(limits.min_quality)}
        if gate is None:
            gate_status, detail = NOT_APPLICABLE, "no quality floor set (quality is optimised)"
            return {
                **snapshot,
                "status": gate_status,
                "detail": detail,
                "value": value,
                "threshold": threshold,
            }
    assert gate is not None  # every gate but an unset quality floor is evaluated
    return {
        **snapshot,
        "status": gate.status,
        "detail": gate.detail,
        "value": value,
        "threshold": threshold,
    }


def _checks_scored_gate(runs: list) -> dict[str, Any]:
    """Fail closed on what could not be scored (DESIGN section 10.5). A case's pass does not
    count skipped or errored checks against it (section 5), so a run whose judge was down, or
    whose agent crashed on every trial, can show a perfect case pass rate; the release must not
    rest on that. A check disabled for a case by an override is not blocking there, and does not
    count. From the runs' stored figures (`evaluations.contract.db.unscored_blocking` and
    `trials_in_error`), a query or two for the runs without, whatever the run size."""
    unscored = unscored_blocking(runs)
    failed_trials = trials_in_error(runs)
    per_run = [
        {
            "run": run.pk,
            "unscored_blocking": unscored.get(run.pk, 0),
            "trials_error": failed_trials.get(run.pk, 0),
        }
        for run in runs
    ]
    bad = [r for r in per_run if r["unscored_blocking"] or r["trials_error"]]
    if not runs:
        status, detail = FAIL, "no gate run"
    elif bad:
        status = FAIL
        detail = "; ".join(
            f"run #{r['run']}: {r['unscored_blocking']} blocking check result(s) not scored, "
            f"{r['trials_error']} trial(s) in error"
            for r in bad
        )
    else:
        status, detail = PASS, "every blocking check was scored in every trial"
    return {
        "name": "checks_scored",
        "label": "blocking checks scored",
        "status": status,
        "detail": detail,
        "value": {"runs": per_run},
        "threshold": {"max_unscored_blocking": 0, "max_trials_error": 0},
    }


def _case_pass_rate_gate(runs: list, minimum: float) -> dict[str, Any]:
    """The policy's `min_case_pass_rate`: every gate run must reach it; a run without a rate
    (not completed, or no cases) fails closed."""
    rates = [(run.pk, (run.summary or {}).get("case_pass_rate")) for run in runs]
    missing = [pk for pk, rate in rates if rate is None]
    low = [(pk, rate) for pk, rate in rates if rate is not None and rate < minimum]
    if not runs or missing:
        status = FAIL
        detail = (
            "no gate run"
            if not runs
            else (f"no case pass rate for run(s) {', '.join(f'#{pk}' for pk in missing)}")
        )
    elif low:
        status = FAIL
        detail = "; ".join(f"run #{pk}: {rate:.3f} < {minimum}" for pk, rate in low)
    else:
        status = PASS
        detail = "; ".join(f"run #{pk}: {rate:.3f} >= {minimum}" for pk, rate in rates)
    return {
        "name": "case_pass_rate",
        "label": "case pass rate",
        "status": status,
        "detail": detail,
        "value": {"runs": [{"run": pk, "rate": rate} for pk, rate in rates]},
        "threshold": {"min": minimum},
    }
