"""The release decision: a version's gate runs under a publishing policy, as a stored snapshot.

This module is the decision's one home. `make_decision(publish_request)` reads the request's
gate runs, applies its policy and returns the snapshot the request stores (and a bypass is
bound to); everything else (the request's state, publish, bypass, the `gate` command, the API,
the publish page) reads the snapshot through `release_of`, `outcome_of`, `missing_of` and
`gate_rows`.

1. `policy_applied(policy)`: a `PublishingPolicy` as the plain `AppliedThresholds` the verdict
   reads; the only place a policy becomes terms of a verdict (the decision, the thresholds
   provider every page and `manage.py evaluate` use, and the verdict API's `?policy=` all go
   through it).
2. `decide(runs, policy)`: `evaluations.verdict.gate_verdict` of the runs under those terms,
   the one verdict function every surface calls, written as the snapshot: every gate with its
   numbers and bound, the first failing gate, `release` (pass only when the verdict passed)
   and the verdict itself.

What may happen next to a version once it has a decision is `governance.publishing.next_step`;
the action that carries it out is `governance.actions.publish_version`.
"""

from typing import Any

from django.utils import timezone

from evaluations.contract import (
    FAIL,
    PASS,
    THRESHOLD_FIELDS,
    AppliedThresholds,
    Thresholds,
    parse_thresholds,
)
from evaluations.reads.calibration import informative_checks
from evaluations.verdict import (
    FAILED,
    INCOMPLETE,
    INSUFFICIENT,
    PASSED,
    gate_label,
    gate_verdict,
)
from governance.models import PublishingPolicy
from sherlock.core.json_values import exact

__all__ = [
    "FAIL",
    "PASS",
    "decide",
    "gate_label",
    "gate_rows",
    "in_force_thresholds",
    "make_decision",
    "missing_of",
    "outcome_of",
    "policy_applied",
    "policy_applied_by_id",
    "policy_thresholds",
    "policy_values",
    "release_of",
]


def policy_values(policy: PublishingPolicy) -> dict[str, Any]:
    """The contract limits of `policy` as its columns hold them (recorded in the snapshot): the
    columns named by the contract's own list, `THRESHOLD_FIELDS`, which the policy verbs edit too
    (`governance.actions.policy_fields`)."""
    return {name: getattr(policy, name) for name in THRESHOLD_FIELDS}


def policy_thresholds(policy: PublishingPolicy) -> Thresholds:
    """The contract `Thresholds` of `policy`: its limits read once, as the contract reads
    plain limits (`parse_thresholds`)."""
    return parse_thresholds(policy_values(policy))


def policy_applied(policy: PublishingPolicy) -> AppliedThresholds:
    """`policy` as the plain terms of a verdict (`evaluations.verdict`)."""
    return AppliedThresholds(
        policy_thresholds(policy),
        policy_id=policy.pk,
        policy_name=policy.name,
        policy_version=policy.version,
        scope="global" if policy.agent_id is None else "agent",
        min_case_pass_rate=policy.min_case_pass_rate,
        case_pass_rate_decides_on=policy.case_pass_rate_decides_on,
        case_pass_rate_confidence=policy.case_pass_rate_confidence,
        max_regression=policy.max_regression,
        floors_decide_on=policy.floors_decide_on,
        corrected_checks=tuple(sorted((policy.corrected_checks or {}).items())),
    )


def policy_applied_by_id(policy_id):
    """`policy_applied` of the policy with id `policy_id`, or None: the lookup of
    `evaluations.contract.applied` for a verdict asked under a named policy."""
    policy = PublishingPolicy.objects.filter(pk=policy_id).first()
    return None if policy is None else policy_applied(policy)


def in_force_thresholds(agents):
    """`{agent pk: AppliedThresholds}` of the policy that would govern publishing each of
    `agents` now (`PublishingPolicy.objects.in_force_for_agents`, in one query); an agent no
    policy governs is left out (the default thresholds apply to it).

    This is the provider of `evaluations.contract.applied` (registered in
    `GovernanceConfig.ready`), the one documented hook through which the pages and commands of
    evaluations show a run under the policy in force without importing governance."""
    in_force = PublishingPolicy.objects.in_force_for_agents(agents)
    return {pk: policy_applied(policy) for pk, policy in in_force.items() if policy is not None}


def make_decision(publish_request):
    """The decision snapshot for `publish_request`: gates, first failing gate, release verdict,
    the runs, the policy version and the checks that counted as informative (with why),
    stamped with the config hash it was made for."""
    runs = publish_request.runs.select_related("dataset_version__dataset", "agent_version__agent")
    runs = list(runs.order_by("pk"))
    live = list(publish_request.live_runs.select_related("agent_version").order_by("pk"))
    decision = decide(runs, publish_request.policy, live=live)
    # Which checks did not block (mode, calibration, overrides) and why.
    decision["informative_checks"] = informative_checks(runs)
    decision["config_hash"] = publish_request.config_hash
    decision["decided_at"] = timezone.now().isoformat()
    return decision


def decide(runs, policy: PublishingPolicy, live=()) -> dict[str, Any]:
    """The release decision of `runs` (one agent version's gate runs, paired with `live`, the
    live version's runs, under a margin of regression) under `policy`: a JSON-ready snapshot,
    every gate evaluated even after one fails, in their fixed order (docs/governance.md,
    "The decision snapshot"). Reads `run.dataset_version.dataset` (select it with the runs).
    """
    runs, live = list(runs), list(live)
    verdict = gate_verdict(runs, policy_applied(policy), live)
    gates = [
        {
            "name": gate.name,
            "label": gate.label,
            "status": gate.state,
            "detail": gate.detail,
            "value": gate.value,
            "threshold": gate.bound,
        }
        for gate in verdict.gates
    ]
    first = verdict.first_failing_gate
    return {
        "policy": {
            "id": policy.pk,
            "name": policy.name,
            "scope": policy.scope_key,
            "version": policy.version,
            "enforcement": policy.enforcement,
            "thresholds": {k: exact(v) for k, v in policy_values(policy).items()},
            "min_case_pass_rate": policy.min_case_pass_rate,
            "case_pass_rate_decides_on": policy.case_pass_rate_decides_on,
            "case_pass_rate_confidence": policy.case_pass_rate_confidence,
            "max_regression": policy.max_regression,
            "floors_decide_on": policy.floors_decide_on,
            "corrected_checks": policy.corrected_checks or {},
            "gate_runs_stop_early": policy.gate_runs_stop_early,
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
        "live_runs": [
            {"id": run.pk, "agent_version": run.agent_version.number, "status": run.status}
            for run in live
        ],
        "measures": verdict.contract.as_dict() if verdict.contract else None,
        "gates": gates,
        "first_failing_gate": first,
        "release": PASS if verdict.outcome == PASSED else FAIL,
        "verdict": verdict.as_dict(),
    }


def release_of(decision):
    """ "pass" or "fail" for a stored snapshot; anything unreadable is a fail (fail closed)."""
    return PASS if (decision or {}).get("release") == PASS else FAIL


def outcome_of(decision):
    """ "passed", "failed", "incomplete" or "insufficient" for a stored snapshot, as the run
    page says it: a blocked decision whose verdict was incomplete (trials in error, blocking
    results not scored) is incomplete, one whose interval left a gate undecided is
    insufficient, neither is failed; anything unreadable is failed (fail closed)."""
    if release_of(decision) == PASS:
        return PASSED
    verdict = (decision or {}).get("verdict") or {}
    outcome = verdict.get("outcome")
    return outcome if outcome in (INCOMPLETE, INSUFFICIENT) else FAILED


def blocking_gate(decision):
    """The name of the gate that blocked a snapshot: the first failing one, else the first its
    interval left undecided; None when none did."""
    decision = decision or {}
    if decision.get("first_failing_gate"):
        return decision["first_failing_gate"]
    return next(
        (
            g.get("name")
            for g in decision.get("gates") or []
            if isinstance(g, dict) and g.get("status") == INSUFFICIENT
        ),
        None,
    )


def missing_of(decision):
    """The evidence a snapshot's verdict lacked, as the API writes it: `{code, detail, fix,
    docs}` each."""
    verdict = (decision or {}).get("verdict") or {}
    return [item for item in verdict.get("missing") or [] if isinstance(item, dict)]


def paired_of(decision):
    """The regression gate of a snapshot, for the publish page: `{state, detail, paired,
    discordant}` (the discordant cases regressions first), or None without that gate."""
    gate = next(
        (
            g
            for g in (decision or {}).get("gates") or []
            if isinstance(g, dict) and g.get("name") == "regression"
        ),
        None,
    )
    if gate is None or not isinstance(gate.get("value"), dict):
        return None
    value = gate["value"]
    return {
        "state": gate.get("status"),
        "detail": gate.get("detail"),
        "paired": value.get("paired"),
        "discordant": [row for row in value.get("discordant") or [] if isinstance(row, dict)],
    }


def gate_rows(decision):
    """The gates of a snapshot as (label, status, detail) rows, for tables and the CLI: each
    gate named in words (`gate_label`)."""
    gates = (decision or {}).get("gates") or []
    return [
        (
            g.get("label") or gate_label(g.get("name", "?")),
            g.get("status", FAIL),
            g.get("detail", ""),
        )
        for g in gates
    ]
