"""A run as OpenTelemetry traces: one OTLP/JSON ``ExportTraceServiceRequest``.

The contract keeps operational telemetry in the ledger ("token usage, operation duration, tool call
count ... explain workload and efficiency; they do not claim that a record exists"), so the
export carries both, each under its own names:

- GenAI semantic conventions, release v1.41.0 (``SCHEMA_URL``): per trial an ``invoke_agent``
  span (``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.agent.name``/``id``/
  ``version``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``/``output_tokens``), one
  ``execute_tool`` child per tool call (``gen_ai.tool.name``, ``gen_ai.tool.call.id``), and one
  ``gen_ai.evaluation.result`` event per check result on the agent span
  (``gen_ai.evaluation.name``, ``gen_ai.evaluation.score.value``,
  ``gen_ai.evaluation.score.label``, ``gen_ai.evaluation.explanation``, ``error.type``);
- the contract's own facts, which the conventions do not name, under ``sherlock.``: the
  declared completion, the outcome verdict and its verifier, each effect's destination state
  and intentional denial, the wait and the observation windows, the cost and its coverage.
  Never an invented ``gen_ai.`` name (``GENAI_ATTRIBUTES`` lists the ones used).

One trace per trial; ids are deterministic (a hash of run, trial and position), so exporting
the same run twice gives the same file. JSON encoding follows OTLP/JSON: hex ids, integer
enums, 64-bit integers and nanosecond times as strings.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone

from agents.models import Tool
from evaluations.contract import wait_is_owned
from evaluations.models import CheckResult, Run
from sherlock.core.transcripts import ToolCall, tool_calls

SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.0"
SCOPE = {"name": "sherlock.export_run", "version": "1"}

SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3
STATUS_UNSET = 0
STATUS_ERROR = 2

# Every gen_ai.* name this module writes, all from the v1.41.0 registry (model/gen-ai).
GENAI_ATTRIBUTES = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.agent.name",
        "gen_ai.agent.id",
        "gen_ai.agent.version",
        "gen_ai.request.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.description",
        "gen_ai.evaluation.name",
        "gen_ai.evaluation.score.value",
        "gen_ai.evaluation.score.label",
        "gen_ai.evaluation.explanation",
    }
)
EVALUATION_EVENT = "gen_ai.evaluation.result"

# `gen_ai.provider.name` is required on invoke_agent spans; a well-known value where the
# adapter implies one, else Sherlock's own (the enum is open).
_PROVIDERS = {"openai_chat": "openai"}
# A remote agent is a client span; an in-process one is internal (the conventions' two kinds).
_REMOTE_ADAPTERS = {"http", "openai_chat"}


def _id(*parts: Any, length: int) -> str:
    digest = hashlib.sha256(":".join(map(str, ("sherlock", *parts))).encode()).hexdigest()
    return digest[:length]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _nanos(moment: datetime) -> str:
    # Integer arithmetic: a float timestamp would lose the microseconds.
    return str((moment - _EPOCH) // timedelta(microseconds=1) * 1000)


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    return {"stringValue": json.dumps(value, default=str, sort_keys=True)}


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"key": key, "value": _value(value)} for key, value in values.items() if value is not None
    ]


def _times(trial, run) -> tuple[datetime, datetime]:
    """The trial's span: started -> finished, or as much of it as was recorded."""
    start = trial.started_at or trial.finished_at or run.started_at or run.created_at
    end = trial.finished_at
    if end is None or end < start:
        end = start + timedelta(milliseconds=trial.latency_ms or 0)
    return start or timezone.now(), end or timezone.now()


def _agent_attributes(run, trial) -> dict[str, Any]:
    version = run.agent_version
    agent = version.agent
    config = version.config or {}
    evidence = trial.outcome_evidence or {}
    wait = trial.wait or {}
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": config.get("provider")
        or _PROVIDERS.get(version.adapter, f"sherlock.{version.adapter}"),
        "gen_ai.agent.name": agent.name,
        "gen_ai.agent.id": agent.slug,
        "gen_ai.agent.version": str(version.number),
        "gen_ai.request.model": config.get("model"),
        "gen_ai.usage.input_tokens": trial.prompt_tokens,
        "gen_ai.usage.output_tokens": trial.completion_tokens,
        "sherlock.run.id": run.pk,
        "sherlock.run.purpose": run.purpose,
        "sherlock.trial.id": trial.pk,
        "sherlock.trial.status": trial.status,
        "sherlock.case.key": trial.case.key,
        "sherlock.trial.repetition": trial.repetition,
        "sherlock.declared_complete": trial.declared_complete,
        "sherlock.outcome.verdict": trial.outcome_verdict or None,
        "sherlock.outcome.verifier": evidence.get("verifier"),
        "sherlock.outcome.reason": evidence.get("reason"),
        "sherlock.progress.active_windows": trial.active_windows,
        "sherlock.progress.windows_with_evidence_delta": trial.windows_with_evidence_delta,
        "sherlock.progress.excluded_wait_windows": trial.excluded_wait_windows,
        "sherlock.progress.stale_collector_windows": trial.stale_collector_windows,
        "sherlock.wait.owner": wait.get("owner"),
        "sherlock.wait.decision_requested": wait.get("decision_requested"),
        "sherlock.wait.deadline": wait.get("deadline"),
        "sherlock.wait.resumable": wait.get("resumable"),
        "sherlock.wait.owned": wait_is_owned(wait) if trial.wait else None,
        "sherlock.cost.usd": float(trial.cost_usd) if trial.cost_usd is not None else None,
        "sherlock.cost.billing_coverage": trial.billing_coverage,
    }


def _calls(trial) -> list[ToolCall]:
    """The trial's tool calls as the checks and evidence collection read them. Calls that cannot
    be read give no call spans: their effect (one `unknown` entry) is still exported."""
    try:
        return tool_calls(trial.transcript or {}) or []
    except ValueError:
        return []


def _tool_spans(trial) -> list[tuple[dict[str, Any], dict | None]]:
    """(call, effect) pairs: every transcript tool call with its effect entry when it has one;
    effects with no call in the transcript (imported trials) stand alone."""
    effects = [e for e in trial.tool_effects or [] if isinstance(e, dict)]
    by_id = {e.get("call_id"): e for e in effects if e.get("call_id")}
    unmatched = [e for e in effects if not e.get("call_id")]
    pairs = []
    for call in _calls(trial):
        effect = by_id.pop(call.id, None) if call.id else None
        if effect is None:
            effect = next((e for e in unmatched if e.get("call") == call.name), None)
            if effect is not None:
                unmatched.remove(effect)
        pairs.append(({"name": call.name, "id": call.id}, effect))
    for effect in [*by_id.values(), *unmatched]:
        pairs.append(({"name": effect.get("call"), "id": effect.get("call_id")}, effect))
    return pairs


def _tool_span(trial, trace_id, parent_id, position, call, effect, tools, start, end):
    name = call["name"] or "tool"
    tool = tools.get(name)
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call["id"],
        "gen_ai.tool.description": tool.description if tool and tool.description else None,
        "sherlock.tool.effectful": tool.effectful if tool else None,
    }
    if effect is not None:
        attributes.update(
            {
                "sherlock.tool.effect.state": effect.get("state"),
                "sherlock.tool.intentionally_denied": bool(effect.get("intentionally_denied")),
                "sherlock.tool.effect.evidence": effect.get("evidence"),
            }
        )
    failed = effect is not None and effect.get("state") == "failed"
    return {
        "traceId": trace_id,
        "spanId": _id("tool", trial.run_id, trial.pk, position, length=16),
        "parentSpanId": parent_id,
        "name": f"execute_tool {name}",
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": _nanos(start),
        "endTimeUnixNano": _nanos(end),
        "attributes": _attributes(attributes),
        "status": {"code": STATUS_ERROR, "message": "effect failed at the destination"}
        if failed
        else {"code": STATUS_UNSET},
    }


def _evaluation_event(result, at) -> dict[str, Any]:
    check = result.check_config
    return {
        "timeUnixNano": _nanos(at),
        "name": EVALUATION_EVENT,
        "attributes": _attributes(
            {
                "gen_ai.evaluation.name": check.label,
                "gen_ai.evaluation.score.value": result.score,
                "gen_ai.evaluation.score.label": result.status,
                "gen_ai.evaluation.explanation": result.reason or None,
                "error.type": "check_error" if result.status == "error" else None,
                "sherlock.check.kind": check.kind,
                "sherlock.check.blocking": result.blocking,
                "sherlock.check.threshold": result.threshold,
                "sherlock.check.quality_grader": check.quality_grader or None,
            }
        ),
    }


def run_to_otlp(run) -> dict[str, Any]:
    """The whole run as one OTLP/JSON trace export (a handful of queries, any run size)."""

    run = Run.objects.select_related("agent_version__agent", "dataset_version__dataset").get(
        pk=run.pk
    )
    trials = list(run.trials.select_related("case").order_by("case__key", "repetition", "pk"))
    results: dict[int, list] = {}
    for result in (
        CheckResult.objects.filter(trial__run=run)
        .select_related("check_config")
        .order_by("trial_id", "check_config__position", "check_config__label")
    ):
        results.setdefault(result.trial_id, []).append(result)
    names = {call.name for trial in trials for call in _calls(trial)} | {
        effect.get("call") for trial in trials for effect in trial.tool_effects or []
    }
    tools = Tool.objects.named(run.agent_version.agent_id, names - {None})

    kind = SPAN_KIND_CLIENT if run.agent_version.adapter in _REMOTE_ADAPTERS else SPAN_KIND_INTERNAL
    spans = []
    for trial in trials:
        start, end = _times(trial, run)
        trace_id = _id("trace", run.pk, trial.pk, length=32)
        span_id = _id("agent", run.pk, trial.pk, length=16)
        error = trial.status == "error"
        spans.append(
            {
                "traceId": trace_id,
                "spanId": span_id,
                "name": f"invoke_agent {run.agent_version.agent.name}",
                "kind": kind,
                "startTimeUnixNano": _nanos(start),
                "endTimeUnixNano": _nanos(end),
                "attributes": _attributes(
                    {
                        **_agent_attributes(run, trial),
                        "error.type": "agent_call_failed" if error else None,
                    }
                ),
                "events": [_evaluation_event(r, end) for r in results.get(trial.pk, [])],
                "status": {"code": STATUS_ERROR, "message": trial.error}
                if error
                else {"code": STATUS_UNSET},
            }
        )
        for position, (call, effect) in enumerate(_tool_spans(trial)):
            spans.append(
                _tool_span(trial, trace_id, span_id, position, call, effect, tools, start, end)
            )

    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": _attributes(
                        {
                            "service.name": "sherlock",
                            "sherlock.run.id": run.pk,
                            "sherlock.dataset": run.dataset_version.dataset.slug,
                            "sherlock.dataset.version": run.dataset_version.number,
                        }
                    )
                },
                "scopeSpans": [{"scope": SCOPE, "schemaUrl": SCHEMA_URL, "spans": spans}],
                "schemaUrl": SCHEMA_URL,
            }
        ]
    }
