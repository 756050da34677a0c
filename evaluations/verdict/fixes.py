"""What fixes a failed gate: the words and the link each gate's failure shows, and the tools
behind unknown effects.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import urlencode

from django.urls import reverse

from evaluations.models import Trial
from evaluations.verdict.model import EVIDENCE_GATE, Gate, doc_url

# The docs' section of each gate (docs/contract.md, "Fixing a failed gate").
GATE_DOCS = {
    "coverage": "Coverage",
    "false_success": "False success",
    "unknown_effects": "Unknown effects",
    "floors": "Floors",
    "budget": "Budget",
    "quality": "Quality",
    "checks_scored": "Blocking checks scored",
    "case_pass_rate": "Case pass rate",
    "regression": "No regression against live",
    "corrected_rates": "Judge-corrected pass rates",
}
REGISTER_TOOLS = "Admin → Agents → Tools; a Builder of the agent may, an Admin may share one"


def register_tool_url(agent, name) -> str:
    """The admin's form to register tool `name` for `agent` (filled in), as a path."""

    query = {"name": name, **({"agent": agent.pk} if agent is not None else {})}
    return f"{reverse('admin:agents_tool_add')}?{urlencode(query)}"


def gate_fix(gate: Gate, runs: list, causes=()) -> tuple[str, str]:  # noqa: C901
    """(what to do about ``gate``'s failure, the docs' section that explains it): what the gate
    measures, what failed in these runs, who may change it. ``causes``: the runs' unknown
    effects as ``unknown_effect_causes`` counts them."""
    docs = doc_url("contract", GATE_DOCS.get(gate.name, ""))
    value = gate.value if isinstance(gate.value, dict) else {}
    if gate.name == "coverage":
        parts = []
        if value.get("missing_cost_trials") or value.get("estimated_cost_trials"):
            sentence = report_cost_fix(runs)
            parts.append(sentence[:1].lower() + sentence[1:])
        if value.get("unpriced_judge_calls"):
            parts.append(
                "give the judge's model a price (Admin → Model prices; a judge on your own "
                "server: SHERLOCK_JUDGE_FREE=true)"
            )
        if value.get("completions_without_outcome") or value.get("unverified_completions"):
            parts.append("give the dataset's cases an outcome verifier (`outcome_check`)")
        if value.get("effects_without_state"):
            parts.append(f"give every effectful tool a verifier ({REGISTER_TOOLS})")
        fix = "; ".join(parts) or "see the coverage gate's detail"
        return f"Coverage measures whether the evidence is complete: {fix}.", docs
    if gate.name == "false_success":
        return (
            "False success counts declared completions whose outcome check found the work not "
            "done: open the failed trials on the run page (outcome failed) and fix the agent, "
            "or the outcome verifier if it is wrong.",
            docs,
        )
    if gate.name == "unknown_effects":
        merged: dict[tuple[str, str], int] = {}
        for name, why, n in causes:  # the runs of a gate verdict, counted together
            merged[(name, why)] = merged.get((name, why), 0) + n
        causes = sorted(((name, why, n) for (name, why), n in merged.items()), key=lambda c: -c[2])
        unregistered = sorted({name for name, why, _ in causes if why == UNREGISTERED})
        unverified = sorted({name for name, why, _ in causes if why == NO_VERIFIER})
        parts = []
        if unregistered:
            agent = runs[0].agent_version.agent if runs else None
            where = "; ".join(register_tool_url(agent, name) for name in unregistered[:3])
            whose = f" as {agent.slug}'s tools" if agent is not None else " as tools"
            parts.append(
                f"register {', '.join(repr(n) for n in unregistered)}{whose} with a verifier "
                f"that reads the destination (a Builder of the agent registers them: {where})"
            )
        if unverified:
            parts.append(
                f"give {', '.join(repr(n) for n in unverified)} a verifier ({REGISTER_TOOLS})"
            )
        other = [f"{name}: {why} ({n})" for name, why, n in causes if why not in MARKED]
        if other:
            parts.append(f"see why their verifiers could not decide: {'; '.join(other[:5])}")
        found = "; ".join(f"{name} ({why}, {n} call(s))" for name, why, n in causes[:5])
        return (
            "Unknown effects are tool calls whose effect nobody could check at the destination"
            + (f": {found}" if found else "")
            + (f". To fix: {'; '.join(parts)}." if parts else "."),
            docs,
        )
    if gate.name == "floors":
        return (
            "Useful progress is the share of observation windows in which the agent produced "
            "evidence of progress; tool-effect integrity the share of tool effects verified at "
            "the destination (of verified, failed and unknown). The floor applies to the lower "
            "bound of the 95 % interval: more trials, or fewer stalled windows and unverified "
            "effects, raise it; an Admin sets the floors in the policy.",
            docs,
        )
    if gate.name == "budget":
        return (
            "The budget is the cost per verified outcome: lower what the agent spends, verify "
            "more of its outcomes, or an Admin raises the budget in the policy.",
            docs,
        )
    if gate.name == "quality":
        return (
            "Quality is the mean score of the dataset's quality grader: see its results on the "
            "run page; an Admin sets the floor in the policy.",
            docs,
        )
    if gate.name == "case_pass_rate":
        return (
            "The case pass rate counts the cases whose blocking checks all passed, of the "
            "cases with a verdict: open the failed cases on the run page (show: failed) for "
            "the checks that failed and why.",
            docs,
        )
    if gate.name == "regression":
        return (
            "No regression against live pairs the candidate with the live version on the same "
            "cases: open the cases that passed only on live (the compare page and the publish "
            "page list them first) and fix what the candidate does wrong there.",
            docs,
        )
    if gate.name == "corrected_rates":
        return (
            "A judge-corrected pass rate is the check's rate in the run corrected by people's "
            "labels on a random sample of its results: open the check's calibration page for "
            "what the judge gets wrong, and fix what the agent does on the failed results.",
            docs,
        )
    if gate.name == EVIDENCE_GATE:
        return (
            "Every blocking check must be scored and every trial must finish: see what is "
            "missing (the agent, the judge) and run again once it answers.",
            docs,
        )
    return "", docs


def report_cost_fix(runs: list) -> str:
    """How the runs' trials report what they cost, in the words of who runs the agent: a task
    run by the `sherlock` client returns `cost_usd` with its output; a server-side adapter
    reports billed cost (docs/contract.md, "Cost")."""
    client = any(str(run.agent_version.adapter) == "client" for run in runs)
    if client:
        return (
            "Return `cost_usd` with your task's output (what the call cost you; 0 for code "
            "that calls no model), or `usage` with a `model` that has a price (Admin → Model "
            "prices)"
        )
    return (
        "Have the adapter report billed cost (`cost_usd` in the agent's answer), or token "
        "usage with a price for its model (Admin → Model prices)"
    )


UNREGISTERED, NO_VERIFIER = "not registered", "no verifier"
MARKED = (UNREGISTERED, NO_VERIFIER)
_UNKNOWN_SAMPLE = 500  # trials read to name the tools behind unknown effects


def unknown_effect_causes(runs: list) -> dict[int, list[tuple[str, str, int]]]:
    """``{run pk: [(tool name, why, calls)]}`` of the runs' tool effects with unknown state,
    the most frequent first: ``not registered``, ``no verifier`` or the verifier's own reason.
    One query over at most ``_UNKNOWN_SAMPLE`` trials that have any, none without runs."""

    if not runs:
        return {}
    counted: dict[int, Counter] = {}
    effects_of = Trial.objects.filter(
        run_id__in=[run.pk for run in runs], effects_unknown__gt=0
    ).values_list("run_id", "tool_effects")[:_UNKNOWN_SAMPLE]
    for run_id, effects in effects_of:
        for effect in effects if isinstance(effects, list) else ():
            if not isinstance(effect, dict) or effect.get("state") != "unknown":
                continue
            # Imported trials carry the evidence they were given: a dict, a string, anything.
            evidence = effect.get("evidence")
            reason = evidence.get("reason") if isinstance(evidence, dict) else evidence
            reason = str(reason or "no reason given")
            if "is not registered" in reason:
                reason = UNREGISTERED
            elif reason == "the tool names no verifier":
                reason = NO_VERIFIER
            key = (str(effect.get("call") or "?")[:200], reason[:200])
            counted.setdefault(run_id, Counter())[key] += 1
    return {
        run_id: [(name, why, n) for (name, why), n in found.most_common()]
        for run_id, found in counted.items()
    }
