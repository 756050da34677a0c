"""What each part of Sherlock reads as a transcript's tool calls, shape by shape (issue 10,
point 6): the checks (`tools_used`, `trajectory`), evidence collection (`tool_effects`) and the
OpenTelemetry export must agree on the name, the arguments and the id of every call."""

import json

import pytest
from django.utils import timezone

from agents.models import Tool
from evaluations.checks import evaluate
from evaluations.choices import TrialStatus
from evaluations.evidence import collect_evidence
from evaluations.models import Trial
from evaluations.otel import run_to_otlp
from tests.support.contract_runs import empty_run
from tests.support.verifiers import make_trial

pytestmark = pytest.mark.django_db

ARGUMENTS = {"order": "A-1001", "amount": 40}
LEDGER = {"A-1001": 40}

SHAPES = {
    # What openai_chat's model returns, arguments as a JSON string.
    "openai": {
        "id": "call_1",
        "type": "function",
        "function": {"name": "orders.refund", "arguments": json.dumps(ARGUMENTS)},
    },
    # Sherlock's own transcript shape (what the adapters write).
    "plain": {"id": "call_1", "name": "orders.refund", "arguments": ARGUMENTS},
    "plain, JSON-string arguments": {
        "id": "call_1",
        "name": "orders.refund",
        "arguments": json.dumps(ARGUMENTS),
    },
    # Vertex AI's trajectory shape.
    "vertex": {"tool_name": "orders.refund", "tool_input": ARGUMENTS},
}
MALFORMED = {
    "a bare name": "orders.refund",
    "no name": {"arguments": ARGUMENTS},
}


def refund_for_call(context):
    """An effect verifier: the call's refund is in the ledger."""
    arguments = context["call"]["arguments"]
    return LEDGER.get(arguments["order"]) == arguments["amount"]


@pytest.fixture(autouse=True)
def _verifier_allowed(settings):
    settings.SHERLOCK_VERIFIER_CALLABLES = [f"{__name__}.refund_for_call"]


def tools_used(call):
    wanted = {"tools": [{"name": "orders.refund", "arguments": {"order": "A-1001"}}]}
    verdict = evaluate("tools_used", wanted, {}, {"tool_calls": [call]})
    return verdict.score, verdict.evidence.get("called") if verdict.outcome == "scored" else None


def trajectory(call):
    params = {"metric": "single_tool_use", "tool_name": "orders.refund"}
    return evaluate("trajectory", params, {}, {"tool_calls": [call]}).score


def effects(call):
    refund = Tool.objects.create(
        name="orders.refund",
        effectful=True,
        verifier={"kind": "python", "callable": f"{__name__}.refund_for_call"},
    )
    trial = make_trial(tools=[refund])
    collected = collect_evidence(trial, {"tool_calls": [call]})
    return [(e["call"], e["call_id"], e["state"]) for e in collected["tool_effects"]]


def exported_tool_spans(call):
    Tool.objects.create(name="orders.refund", effectful=True, description="Refund an order")
    run = empty_run()
    case_version = run.dataset_version.case_versions.get()
    Trial.objects.create(
        run=run,
        case=case_version.case,
        case_version=case_version,
        repetition=1,
        status=TrialStatus.COMPLETED,
        started_at=timezone.now(),
        finished_at=timezone.now(),
        transcript={"output": "Done.", "tool_calls": [call]},
        tool_effects=[],
    )
    (resource,) = run_to_otlp(run)["resourceSpans"]
    (scope,) = resource["scopeSpans"]
    spans = []
    for span in scope["spans"]:
        attributes = {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}
        if attributes.get("gen_ai.operation.name") == "execute_tool":
            spans.append(
                (
                    span["name"],
                    attributes.get("gen_ai.tool.call.id"),
                    attributes.get("sherlock.tool.effectful"),
                )
            )
    return spans


# --- What each reader returned before one reader (pinned, issue 10 point 6) -------------------

CALLED = ['orders.refund({"amount": 40, "order": "A-1001"})']


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ("openai", (1.0, CALLED)),
        ("plain", (1.0, CALLED)),
        ("plain, JSON-string arguments", (1.0, CALLED)),
        ("vertex", (1.0, CALLED)),
    ],
)
def test_tools_used_reads_every_accepted_shape(shape, expected):
    assert tools_used(SHAPES[shape]) == expected


@pytest.mark.parametrize("shape", list(MALFORMED))
def test_tools_used_refuses_a_malformed_call(shape):
    verdict = evaluate(
        "tools_used", {"tools": ["orders.refund"]}, {}, {"tool_calls": [MALFORMED[shape]]}
    )
    assert verdict.outcome == "error"


@pytest.mark.parametrize("shape", list(SHAPES))
def test_trajectory_reads_every_accepted_shape(shape):
    assert trajectory(SHAPES[shape]) == 1.0


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ("openai", [("orders.refund", "call_1", "verified")]),
        ("plain", [("orders.refund", "call_1", "verified")]),
        ("plain, JSON-string arguments", [("orders.refund", "call_1", "verified")]),
        ("vertex", []),
    ],
)
def test_evidence_collection_verifies_the_effect_of_each_shape(shape, expected):
    assert effects(SHAPES[shape]) == expected


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ("a bare name", [("orders.refund", None, "unknown")]),
        ("no name", []),
    ],
)
def test_evidence_collection_of_a_malformed_call(shape, expected):
    assert effects(MALFORMED[shape]) == expected


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ("openai", [("execute_tool orders.refund", "call_1", None)]),
        ("plain", [("execute_tool orders.refund", "call_1", True)]),
        ("plain, JSON-string arguments", [("execute_tool orders.refund", "call_1", True)]),
        ("vertex", [("execute_tool tool", None, None)]),
    ],
)
def test_the_otel_export_names_the_tool_span_of_each_shape(shape, expected):
    assert exported_tool_spans(SHAPES[shape]) == expected


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ("a bare name", []),
        ("no name", [("execute_tool tool", None, None)]),
    ],
)
def test_the_otel_export_of_a_malformed_call(shape, expected):
    assert exported_tool_spans(MALFORMED[shape]) == expected


# `denied` is the adapter's boolean; a truthy non-boolean is read two ways before one reader.
LOOSELY_DENIED = {**SHAPES["plain"], "denied": "yes"}


def test_tools_used_reads_a_truthy_denied_as_denied():
    params = {"tools": ["orders.refund"], "count_denied": False}
    verdict = evaluate("tools_used", params, {}, {"tool_calls": [LOOSELY_DENIED]})
    assert verdict.score == 0.0


def test_evidence_collection_reads_only_true_as_denied():
    assert effects(LOOSELY_DENIED) == [("orders.refund", "call_1", "verified")]
