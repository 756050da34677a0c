"""What each part of Sherlock reads as a transcript's tool calls, shape by shape (
point 6): the checks (`tools_used`, `trajectory`), evidence collection (`tool_effects`) and the
OpenTelemetry export must agree on the name, the arguments and the id of every call."""

import json

import pytest
from django.utils import timezone

from agents.models import Tool
from evaluations.checks import evaluate
from evaluations.choices import TrialStatus
from evaluations.engine.evidence import collect_evidence
from evaluations.engine.otel import run_to_otlp
from evaluations.models import Trial
from tests.support.contract_runs import empty_run
from tests.support.verifiers import make_trial

pytestmark = pytest.mark.django_db

ARGUMENTS = {"order": "A-1001", "amount": 40}
LEDGER = {"A-1001": 40}


def in_shape(shape, arguments):
    """One call of orders.refund with `arguments`, written the way `shape` writes it."""
    return {
        # What openai_chat's model returns, arguments as a JSON string.
        "openai": {
            "id": "call_1",
            "type": "function",
            "function": {"name": "orders.refund", "arguments": json.dumps(arguments)},
        },
        # Sherlock's own transcript shape (what the adapters write).
        "plain": {"id": "call_1", "name": "orders.refund", "arguments": arguments},
        "plain, JSON-string arguments": {
            "id": "call_1",
            "name": "orders.refund",
            "arguments": json.dumps(arguments),
        },
        # Vertex AI's trajectory shape.
        "vertex": {"tool_name": "orders.refund", "tool_input": arguments},
    }[shape]


SHAPE_NAMES = ("openai", "plain", "plain, JSON-string arguments", "vertex")
SHAPES = {shape: in_shape(shape, ARGUMENTS) for shape in SHAPE_NAMES}
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


# --- Every reader reads every accepted shape the same way (sherlock.core.transcripts)
# ---------------
#
# Before one reader (pinned in the previous commit): evidence collection gave a Vertex call no
# effect at all, read a bare string as a call and skipped a nameless one; the export named a
# Vertex call "tool", looked tools up by the plain `name` only (an OpenAI call lost its tool's
# `effectful`), and exported a nameless call; `tools_used` took any truthy `denied`.

CALLED = ['orders.refund({"amount": 40, "order": "A-1001"})']


@pytest.mark.parametrize("shape", list(SHAPES))
def test_tools_used_reads_every_accepted_shape(shape):
    assert tools_used(SHAPES[shape]) == (1.0, CALLED)


@pytest.mark.parametrize("shape", list(MALFORMED))
def test_tools_used_refuses_a_malformed_call(shape):
    verdict = evaluate(
        "tools_used", {"tools": ["orders.refund"]}, {}, {"tool_calls": [MALFORMED[shape]]}
    )
    assert verdict.outcome == "error"


@pytest.mark.parametrize("shape", list(SHAPES))
def test_trajectory_reads_every_accepted_shape(shape):
    assert trajectory(SHAPES[shape]) == 1.0


@pytest.mark.parametrize("shape", list(SHAPES))
def test_an_effectful_call_in_every_accepted_shape_gets_a_destination_state(shape):
    call_id = None if shape == "vertex" else "call_1"
    assert effects(SHAPES[shape]) == [("orders.refund", call_id, "verified")]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_destination_state_comes_from_the_tools_verifier_in_every_shape(shape):
    # The ledger holds 40, not 41: the verifier reads the call's own arguments, whatever shape.
    wrong = in_shape(shape, {**ARGUMENTS, "amount": 41})
    assert [state for _, _, state in effects(wrong)] == ["failed"]


@pytest.mark.parametrize("shape", list(MALFORMED))
def test_evidence_collection_of_a_malformed_call_is_one_unknown_effect(shape):
    assert effects(MALFORMED[shape]) == [("?", None, "unknown")]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_otel_export_names_the_tool_span_of_every_accepted_shape(shape):
    call_id = None if shape == "vertex" else "call_1"
    assert exported_tool_spans(SHAPES[shape]) == [("execute_tool orders.refund", call_id, True)]


@pytest.mark.parametrize("shape", list(MALFORMED))
def test_the_otel_export_of_a_malformed_call_has_no_call_span(shape):
    assert exported_tool_spans(MALFORMED[shape]) == []


# `denied` is the adapter's boolean: only `true` is a refusal, for the checks as for evidence
# (a refused call is kept as intentionally denied, so a loose reading would verify an effect).
LOOSELY_DENIED = {**SHAPES["plain"], "denied": "yes"}


def test_tools_used_reads_only_true_as_denied():
    params = {"tools": ["orders.refund"], "count_denied": False}
    verdict = evaluate("tools_used", params, {}, {"tool_calls": [LOOSELY_DENIED]})
    assert verdict.score == 1.0


def test_evidence_collection_reads_only_true_as_denied():
    assert effects(LOOSELY_DENIED) == [("orders.refund", "call_1", "verified")]
