"""The gate decision of a publish request, made once its gate runs have finished.

`make_decision(publish_request)` is the one place that turns runs and a policy into a decision
snapshot; everything else (the request's state, publish, bypass, the `gate` command, the API)
reads the snapshot through `release_of` and `gate_rows`. The snapshot is stored on the request
and a bypass is bound to it, so it carries every number, the runs and the policy version used.

`in_force_thresholds(agents)` is the provider of `evaluations.contract.applied` (registered in
`GovernanceConfig.ready`): the thresholds of the policy in force for each agent, which the run
page, the compare page and API and `manage.py evaluate` show a run's contract under, so that
they read the verdict the gate would.

The decision itself is the five-metric contract's (`evaluations.contract.db.decide`): every gate
of seed 003 in its fixed order, then the policy's `min_case_pass_rate`, the first failing gate
and the `release` verdict. It fails closed: no run, a run that did not complete, or a number
that cannot be computed fails its gate; nothing passes by default (DESIGN section 10.5).
"""

from django.utils import timezone

from evaluations.calibration import informative_checks
from evaluations.contract import AppliedThresholds, parse_thresholds
from evaluations.contract.db import decide, policy_thresholds
from governance.models import PublishingPolicy

PASS = "pass"
FAIL = "fail"


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


def in_force_thresholds(agents):
    """`{agent pk: AppliedThresholds}` of the policy that would govern publishing each of
    `agents` now (`PublishingPolicy.objects.in_force_for`, in one query); an agent no policy
    governs is left out (seed 003's defaults apply to it)."""
    in_force = PublishingPolicy.objects.in_force_for_agents(agents)
    return {
        pk: AppliedThresholds(
            parse_thresholds(policy_thresholds(policy)),
            policy_id=policy.pk,
            policy_name=policy.name,
            policy_version=policy.version,
            scope="global" if policy.agent_id is None else "agent",
        )
        for pk, policy in in_force.items()
        if policy is not None
    }


def release_of(decision):
    """ "pass" or "fail" for a stored snapshot; anything unreadable is a fail (fail closed)."""
    return PASS if (decision or {}).get("release") == PASS else FAIL


def gate_rows(decision):
    """The gates of a snapshot as (name, status, detail) rows, for tables and the CLI."""
    gates = (decision or {}).get("gates") or []
    return [(g.get("name", "?"), g.get("status", FAIL), g.get("detail", "")) for g in gates]
