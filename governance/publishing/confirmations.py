"""What the publish page says before a verb that cannot be undone, and the key that binds a
confirmation to it (`governance.views.publish`).

Three verbs of the page change what serves customers or what was paid for, so each is two
steps: the first shows what the verb relies on and what it costs, the second (the posted
`confirmed` key equal to the plan's `key`) runs the action. When what the person saw changed
meanwhile (another bypass, a new frozen dataset version, someone else asked again) the keys
differ and the page shows the new plan instead of acting on one nobody read.

- Publish and roll back: which decision lets the version through (the gate passed, request
  #N; or bypass #M approved by whom and why, used up by publishing; or an advisory policy),
  and which live version it replaces.
- Retire: whether it leaves the agent with no live version.
- Asking again for publication while a decision is open: the request it supersedes (and the
  bypasses that become void), the gate runs it starts (dataset versions, against the ones the
  open decision used) and their estimate (`evaluations.costs.estimate.estimate_start`).

Each plan reads the state an action's `check()` leaves on it, so it describes what `execute()`
would do; the action still decides, on fresh rows, when it runs.
"""

from evaluations.costs.estimate import estimate_start
from evaluations.costs.texts import estimate_cost, format_usd
from evaluations.verdict import INCOMPLETE, gate_label
from governance.choices import BYPASS_ACTIVE
from governance.publishing.decision import missing_of, outcome_of
from governance.publishing.next_step import ADVISORY, BYPASSED, PASSED


def clearance_text(action):
    """How a checked `PublishVersion` (or `RollBackVersion`) clears the gate, in words."""
    request, bypass = action.request, action.bypass
    if action.route == PASSED:
        return f"gate passed, request #{request.pk}"
    if action.route == BYPASSED:
        approver = bypass.approved_by or bypass.requested_by
        return f"uses bypass #{bypass.pk} approved by {approver or '?'}: {bypass.reason}"
    if action.route == ADVISORY:
        failing = request.decision.get("first_failing_gate") or "unknown"
        return (
            f"request #{request.pk} was blocked at {gate_label(failing)}; the policy is advisory "
            "(report only), so it may be published anyway"
        )
    return ""


def clearance_sentence(action):
    """`clearance_text` as the sentence that opens a confirmation: "The gate passed: request
    #3." (not "It gate passed, request #3."), "It uses bypass #2 approved by ...",
    "Request #3 was blocked at budget; the policy is advisory ..."."""
    if action.route == PASSED:
        return f"The gate passed: request #{action.request.pk}."
    text = clearance_text(action).rstrip(".")
    if action.route == BYPASSED:
        return f"It {text}."
    return f"{text[:1].upper()}{text[1:]}."


def publish_plan(action):
    """The confirmation of a checked `PublishVersion` / `RollBackVersion`."""
    version = action.agent_version
    agent = version.agent
    live = agent.live_version
    lines = [clearance_sentence(action)]
    if action.route == BYPASSED:
        if outcome_of(action.request.decision) == INCOMPLETE:
            missing = "; ".join(item["detail"] for item in missing_of(action.request.decision))
            lines.append(
                "The gate runs were incomplete, not failed: their evidence is missing"
                + (f" ({missing})" if missing else "")
                + ". Publishing goes on without it."
            )
        lines.append(f"Bypass #{action.bypass.pk} is used up: it cannot serve again.")
    if live is None:
        lines.append(f"{agent.slug} has no live version now; {version} becomes live.")
    else:
        lines.append(f"{live} is live now; it is retired and {version} becomes live.")
    verb = "Roll back to" if action.verb == "rollback" else "Publish"
    return {
        "verb": action.verb,
        "question": f"{verb} {version}?",
        "lines": lines,
        "warnings": [],
        "button": f"Yes, {verb.lower()} {version}",
        "key": ":".join(
            str(part)
            for part in (
                action.request.pk,
                action.route,
                action.bypass.pk if action.bypass else "-",
                agent.live_version_id or "-",
            )
        ),
    }


def retire_plan(version):
    """The confirmation of retiring `version`, warning when the agent is left without one."""
    agent = version.agent
    is_live = agent.live_version_id == version.pk
    warnings = (
        [
            f"{version} is the live version: {agent.slug} then has no live version until one "
            "is published or rolled back to."
        ]
        if is_live
        else []
    )
    return {
        "verb": "retire",
        "question": f"Retire {version}?",
        "lines": [
            "A retired version stops serving; it can come back only by a roll back, "
            "through the gate again."
        ],
        "warnings": warnings,
        "button": f"Yes, retire {version}",
        "key": f"live:{agent.live_version_id or '-'}",
    }


def request_plan(action, open_request):
    """The confirmation of asking again: a checked `RequestPublication` naming `open_request`
    (its `supersede`), with the dataset versions of the new gate runs and their estimate."""
    version, policy = action.agent_version, action.policy
    used = {run.dataset_version.dataset_id: run.dataset_version for run in open_request.runs.all()}
    runs, total, missing, complete = [], 0, 0, True
    for dataset_version in action.datasets:
        estimate = estimate_start(version, dataset_version, policy.repetitions)
        before = used.get(dataset_version.dataset_id)
        runs.append(
            {
                "dataset_version": dataset_version,
                "before": before,
                "changed": before is not None and before.pk != dataset_version.pk,
                "estimate": estimate,
                "cost": estimate_cost(estimate),
            }
        )
        if estimate["usd"] is None:
            complete = False
        total += estimate["usd_known"] or 0
        missing += estimate["price_missing_calls"] or 0
    voided = [b for b in open_request.bypasses.all() if b.state in BYPASS_ACTIVE]
    state = open_request.state
    lines = [
        f"It supersedes publish request #{open_request.pk} ({state}): that decision is thrown "
        "away and cannot be published any more."
    ]
    warnings = [f"Bypass #{bypass.pk} ({bypass.state}) becomes void." for bypass in voided]
    for run in runs:
        warnings += [
            f"{run['dataset_version']}: {w}; the checks_scored gate blocks on a blocking check "
            "that is not scored."
            for w in run["estimate"]["warnings"]
        ]
    return {
        "verb": "request",
        "question": f"Ask again for publication of {version}?",
        "lines": lines,
        "warnings": warnings,
        "runs": runs,
        "policy": policy,
        "total": format_usd(total) if complete else format_usd(total or None, missing),
        "supersede": open_request.pk,
        "button": f"Yes, supersede request #{open_request.pk} and run the gate again",
        "key": ":".join(
            [
                str(open_request.pk),
                str(policy.pk),
                ",".join(str(dsv.pk) for dsv in action.datasets),
            ]
        ),
    }
