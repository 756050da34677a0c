"""Outcome and tool-effect evidence of one trial, read at the destination.

The release contract: "the transcript may say a flight was booked; the outcome is whether the
booking exists in the database". So the engine never infers an outcome from what the agent said.
Right after the agent call it calls ``collect_evidence(trial, transcript)``, which

- runs the case version's **outcome verifier** (``CaseVersion.outcome_check``) and records
  ``verified``, ``failed`` or ``unavailable`` with the verifier's evidence;
- runs the **effect verifier** (``Tool.verifier``) of every effectful tool the agent called and
  records ``verified``, ``failed`` or ``unknown`` per call; a call the adapter refused because
  the version's tool policy denies the tool (``"denied": true`` on the transcript's call) is
  kept as ``intentionally_denied`` (proof the boundary worked, never a failure);
- reads ``declared_complete``, the owned or unowned ``wait`` and the observation ``windows``
  from the transcript (docs/contract.md has the keys);

and returns the Trial field values to write with the trial, in the same transaction.

The verifiers themselves (their language, the operator's allowlists, the python/http/sql
runners and the predicates) are the tools' part, in ``agents.verifiers``: this module decides
which ones run for a trial, with what context, and what the trial records. A verifier that
cannot decide gives ``unavailable`` (outcomes) or ``unknown`` (effects) with the reason as
evidence, never ``failed`` and never ``verified``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from agents.models import Tool
from agents.verifiers.runners import run_verifier
from agents.verifiers.spec import EFFECT, OUTCOME
from evaluations.choices import EffectState, OutcomeVerdict
from evaluations.contract import read_trial, trial_counts
from sherlock.core.transcripts import read_call, tool_calls

log = logging.getLogger("sherlock.evidence")

WAIT_KEYS = ("owner", "decision_requested", "decision", "deadline", "resumable")


# --- The entry point -------------------------------------------------------------------------


def collect_evidence(trial, transcript) -> dict[str, Any]:
    """Evidence of one trial as Trial field values; never raises.

    Returns ``declared_complete``, ``outcome_verdict``, ``outcome_evidence``, ``progress``,
    ``wait``, ``tool_effects`` and the contract's per-trial counts (``contract_counts``), ready
    for ``Trial.objects.filter(...).update(**fields)``. ``transcript`` None means the agent call
    failed: nothing was declared and no outcome is claimed. Reads ``trial.case_version`` and
    ``trial.run.agent_version`` (select them with the trial), queries the tools once, and reads
    the trial's ``started_at`` from the database when the instance predates its claim.
    """
    try:
        return _collect(trial, transcript)
    except Exception as exc:
        log.exception("collecting evidence of trial %s failed", getattr(trial, "pk", None))
        return _fail_closed(transcript, f"{type(exc).__name__}: {exc}")


def contract_counts(progress: Mapping, wait: Mapping | None, tool_effects: list) -> dict:
    """The Trial count columns for this progress, wait and tool effects (trial-record shapes),
    computed by the same ``trial_counts`` that counts a trial file."""
    record = read_trial(
        {
            "trial_id": "-",
            "variant": "-",
            "declared_complete": False,
            "outcome": None,
            "quality": None,
            "progress": {"active_windows": 0, "windows_with_evidence_delta": 0, **progress},
            "wait": wait,
            "tool_effects": tool_effects,
            "cost": None,
        }
    )
    return trial_counts(record)


def _started_at(trial):
    """The trial's start as stored: the claim that set it may postdate this instance."""
    if trial.started_at is None and trial.pk is not None:
        return type(trial).objects.filter(pk=trial.pk).values_list("started_at", flat=True).first()
    return trial.started_at


def _collect(trial, transcript) -> dict[str, Any]:
    case_version = trial.case_version
    started_at = _started_at(trial)
    trial_context = {
        "id": trial.pk,
        "run_id": trial.run_id,
        "repetition": trial.repetition,
        "started_at": started_at.isoformat() if started_at else None,
        "ended_at": None,  # the trial is still running when its evidence is collected
    }
    return _evidence(
        case_version.as_check_input(),
        case_version.outcome_check,
        trial.run.agent_version,
        trial_context,
        transcript,
    )


def collect_evidence_for(
    case, outcome_check, agent_version, trial_context, transcript, *, tools=None, denied=None
):
    """``collect_evidence`` of a transcript that is not a run's trial (a production trace,
    ``production.online``): the same outcome verifier run, the same tool-effect verifiers and
    the same counts, with the case input, outcome verifier spec and ``trial`` context given
    (``{"id", "trace_id", "started_at", ...}``, what verifier templates read). ``tools``
    (name -> Tool, holding at least the tools the transcript calls) and ``denied`` (the
    version's denied tool names) save ``tool_effects`` its two queries when a caller scoring
    many transcripts has read them once. Never raises."""
    try:
        return _evidence(
            case, outcome_check, agent_version, trial_context, transcript, tools, denied
        )
    except Exception as exc:
        log.exception("collecting evidence of %s failed", trial_context.get("id"))
        return _fail_closed(transcript, f"{type(exc).__name__}: {exc}")


def _evidence(
    case, outcome_check, agent_version, trial_context, transcript, tools=None, denied=None
) -> dict[str, Any]:
    context = {"case": case, "trial": trial_context, "transcript": transcript or {}}
    declared = transcript.get("declared_complete") if transcript else None
    fields: dict[str, Any] = {"declared_complete": declared if isinstance(declared, bool) else None}

    if transcript is None:
        verdict, evidence = (
            (OutcomeVerdict.UNAVAILABLE.value, {"reason": "the agent call failed; no transcript"})
            if outcome_check
            else ("", {})
        )
    elif not outcome_check:
        verdict, evidence = (
            OutcomeVerdict.UNAVAILABLE.value,
            {"reason": "the case names no outcome verifier"},
        )
    else:
        verdict, evidence = run_verifier(outcome_check, context, OUTCOME)
    fields["outcome_verdict"] = verdict
    fields["outcome_evidence"] = evidence

    progress = read_progress(transcript or {})
    wait = read_wait(transcript or {})
    effects = tool_effects(agent_version, transcript or {}, context, tools=tools, denied=denied)
    fields.update(progress=progress, wait=wait, tool_effects=effects)
    fields.update(contract_counts(progress, wait, effects))
    return fields


def _fail_closed(transcript, reason: str) -> dict[str, Any]:
    """What a bug in evidence collection leaves: no outcome verdict possible, and every tool
    call an unknown effect (we cannot tell which ones wrote somewhere)."""
    transcript = transcript if isinstance(transcript, Mapping) else {}
    declared = transcript.get("declared_complete")
    calls = transcript.get("tool_calls") if isinstance(transcript.get("tool_calls"), list) else []
    effects = [
        {
            "call": _name_or_unknown(call),
            "state": EffectState.UNKNOWN.value,
            "intentionally_denied": False,
            "evidence": {"reason": f"evidence collection failed: {reason}"},
        }
        for call in calls
    ]
    fields = {
        "declared_complete": declared if isinstance(declared, bool) else None,
        "outcome_verdict": OutcomeVerdict.UNAVAILABLE.value,
        "outcome_evidence": {"reason": f"evidence collection failed: {reason}"},
        "progress": {},
        "wait": None,
        "tool_effects": effects,
    }
    fields.update(contract_counts({}, None, effects))
    return fields


def _name_or_unknown(item) -> str:
    try:
        return read_call(item).name
    except ValueError:
        return "?"


# --- Transcript keys: windows, wait, tool calls ----------------------------------------------


def read_progress(transcript: Mapping) -> dict[str, int]:
    """The trial's observation windows as a trial record's ``progress`` object.

    ``transcript["windows"]`` is a list of ``{"evidence_delta": str | null, "waiting": bool,
    "stale_collector": bool}``: a stale-collector window is counted apart; a waiting window is
    a wait window (excluded when the wait is owned, a stall otherwise); any other window is an
    active window, with a delta when ``evidence_delta`` names the task-specific change seen.
    """
    windows = transcript.get("windows")
    counts = {
        "active_windows": 0,
        "windows_with_evidence_delta": 0,
        "excluded_wait_windows": 0,
        "stale_collector_windows": 0,
    }
    if not isinstance(windows, list):
        return counts
    for window in windows:
        window = window if isinstance(window, Mapping) else {}
        if window.get("stale_collector"):
            counts["stale_collector_windows"] += 1
        elif window.get("waiting"):
            counts["excluded_wait_windows"] += 1
        else:
            counts["active_windows"] += 1
            if window.get("evidence_delta"):
                counts["windows_with_evidence_delta"] += 1
    return counts


def read_wait(transcript: Mapping) -> dict | None:
    """The transcript's ``wait`` (owner, decision requested, decision, deadline, resumable), or
    None. Whether it is owned is judged by ``wait_is_owned``, not here."""
    wait = transcript.get("wait")
    if not isinstance(wait, Mapping):
        return None
    return {key: wait.get(key) for key in WAIT_KEYS}


def tool_effects(
    agent_version, transcript: Mapping, context: Mapping, *, tools=None, denied=None
) -> list[dict]:
    """One trial-record effect per effectful (or denied) tool call of the transcript.

    Calls are read by ``sherlock.core.transcripts.tool_calls``, the reader the checks and the
    export use, so every shape a check scores has its effect verified. Read-only tools have no
    effect to verify and are left out. A call marked ``denied`` by the adapter is intentionally
    denied. A tool that is not registered cannot be known to be harmless: its effect is
    ``unknown`` (fail closed), and so are the effects of a ``tool_calls`` that is not a list of
    readable calls. A denied tool called *without* a refusal is verified like any other call,
    and its evidence says the boundary did not hold.
    """

    recorded = transcript.get("tool_calls")
    if recorded is not None and not isinstance(recorded, list):
        # Not a list of calls (a string would iterate as one "call" per character): whatever
        # the agent did, its effects cannot be known.
        return [_unknown_calls(f"tool_calls is a {type(recorded).__name__}, not a list")]
    try:
        calls = tool_calls(transcript) or []
    except ValueError as exc:
        # A call in no accepted shape: which tool it was, so whether it wrote, is unknown.
        return [_unknown_calls(f"the transcript's tool calls are invalid: {exc}")]
    if not calls:
        return []
    if tools is None:
        names = {c.name for c in calls}
        tools = Tool.objects.named(agent_version.agent_id, names)
    denied_names = (
        set(agent_version.denied_tools.values_list("name", flat=True))
        if denied is None
        else set(denied)
    )
    effects = []
    for call in calls:
        effect = {"call": call.name, "call_id": call.id}
        tool = tools.get(call.name)
        if call.denied:
            effects.append(
                {
                    **effect,
                    "state": EffectState.VERIFIED.value,
                    "intentionally_denied": True,
                    "evidence": {"reason": "refused by the version's tool policy"},
                }
            )
            continue
        if tool is None:
            state, evidence = (
                EffectState.UNKNOWN.value,
                {"reason": f"tool {call.name!r} is not registered"},
            )
        elif not tool.effectful:
            continue
        elif not tool.verifier:
            state, evidence = EffectState.UNKNOWN.value, {"reason": "the tool names no verifier"}
        else:
            call_context = {
                **context,
                "call": {
                    "name": call.name,
                    "id": call.id,
                    "arguments": call.arguments if call.arguments is not None else {},
                    "result": call.result,
                },
            }
            state, evidence = run_verifier(tool.verifier, call_context, EFFECT)
        if call.name in denied_names:
            evidence = {**evidence, "policy": "the tool is denied for this version but ran"}
        effects.append(
            {**effect, "state": state, "intentionally_denied": False, "evidence": evidence}
        )
    return effects


def _unknown_calls(reason: str) -> dict:
    """The one effect of tool calls that cannot be read: unknown, with the reason."""
    return {
        "call": "?",
        "call_id": None,
        "state": EffectState.UNKNOWN.value,
        "intentionally_denied": False,
        "evidence": {"reason": reason},
    }
