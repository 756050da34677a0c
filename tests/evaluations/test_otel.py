"""`export_run RUN --format otlp`: a run as OTLP/JSON traces with the GenAI semantic-convention
names of release v1.41.0, and the contract's own facts under `sherlock.`, never `gen_ai.`."""

import io
import json
import re

import pytest
from django.core.management import call_command
from django.utils import timezone

from agents.models import Tool
from evaluations.choices import CheckStatus, TrialStatus
from evaluations.engine.evidence import contract_counts
from evaluations.engine.otel import EVALUATION_EVENT, GENAI_ATTRIBUTES, SCHEMA_URL, run_to_otlp
from evaluations.models import CheckResult, Trial
from tests.support.contract_runs import GRADER, empty_run, import_seed_variant

pytestmark = pytest.mark.django_db

HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")

# The GenAI attribute names of semantic conventions v1.41.0 that apply to agent, tool and
# evaluation telemetry (model/gen-ai/registry.yaml); anything else under gen_ai. is invented.
SEMCONV_1_41 = {
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.agent.name",
    "gen_ai.agent.id",
    "gen_ai.agent.version",
    "gen_ai.agent.description",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.response.id",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.conversation.id",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.description",
    "gen_ai.tool.type",
    "gen_ai.evaluation.name",
    "gen_ai.evaluation.score.value",
    "gen_ai.evaluation.score.label",
    "gen_ai.evaluation.explanation",
}


def attrs(item):
    return {a["key"]: next(iter(a["value"].values())) for a in item.get("attributes", [])}


def spans_of(export):
    (resource,) = export["resourceSpans"]
    (scope,) = resource["scopeSpans"]
    assert scope["schemaUrl"] == SCHEMA_URL == "https://opentelemetry.io/schemas/1.41.0"
    return scope["spans"]


@pytest.fixture
def executed_run():
    """A run with one trial that called three tools, one of them refused, and two checks."""
    Tool.objects.create(name="payments.refund", effectful=True, description="Refund an order")
    Tool.objects.create(name="kb.search", effectful=False)
    run = empty_run(
        checks=[
            GRADER,
            {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1},
        ]
    )
    case_version = run.dataset_version.case_versions.get()
    effects = [
        {
            "call": "payments.refund",
            "call_id": "call_2",
            "state": "verified",
            "intentionally_denied": False,
            "evidence": {"observed": "row R-1"},
        },
        {
            "call": "billing.apply_credit",
            "call_id": "call_3",
            "state": "verified",
            "intentionally_denied": True,
            "evidence": {"reason": "refused by the version's tool policy"},
        },
    ]
    wait = {
        "owner": "approver",
        "decision_requested": "approve",
        "deadline": "2026-03-02",
        "resumable": True,
    }
    progress = {"active_windows": 2, "windows_with_evidence_delta": 1, "excluded_wait_windows": 3}
    trial = Trial.objects.create(
        run=run,
        case=case_version.case,
        case_version=case_version,
        repetition=1,
        status=TrialStatus.COMPLETED,
        started_at=timezone.now(),
        finished_at=timezone.now(),
        prompt_tokens=120,
        completion_tokens=30,
        cost_usd="0.25",
        billing_coverage="billed",
        declared_complete=True,
        outcome_verdict="failed",
        outcome_evidence={"verifier": "python agents.demo.outcome_in_ledger", "observed": []},
        transcript={
            "output": "Done.",
            "tool_calls": [
                {"id": "call_1", "name": "kb.search", "arguments": {}},
                {"id": "call_2", "name": "payments.refund", "arguments": {"order": "A"}},
                {"id": "call_3", "name": "billing.apply_credit", "arguments": {}, "denied": True},
            ],
        },
        tool_effects=effects,
        wait=wait,
        progress=progress,
        **contract_counts(progress, wait, effects),
    )
    grader, shape = run.dataset_version.checks.order_by("position")
    CheckResult.objects.create(
        trial=trial,
        check_config=grader,
        score=0.75,
        status="scored",
        reason="rougeL 0.75",
        blocking=False,
    )
    CheckResult.objects.create(
        trial=trial, check_config=shape, score=None, status=CheckStatus.ERROR, reason="judge failed"
    )
    return run


def test_each_trial_is_an_invoke_agent_span_with_execute_tool_children(executed_run):
    spans = spans_of(run_to_otlp(executed_run))

    agent, *tools = spans
    assert agent["name"] == f"invoke_agent {executed_run.agent_version.agent.name}"
    assert [t["name"] for t in tools] == [
        "execute_tool kb.search",
        "execute_tool payments.refund",
        "execute_tool billing.apply_credit",
    ]
    assert HEX32.match(agent["traceId"]) and HEX16.match(agent["spanId"])
    assert "parentSpanId" not in agent
    for tool in tools:
        assert tool["traceId"] == agent["traceId"]
        assert tool["parentSpanId"] == agent["spanId"]
        assert HEX16.match(tool["spanId"])
    assert len({s["spanId"] for s in spans}) == len(spans)
    assert int(agent["endTimeUnixNano"]) >= int(agent["startTimeUnixNano"]) > 10**18


def test_the_agent_span_carries_genai_names_and_the_contract_under_sherlock(executed_run):
    agent = spans_of(run_to_otlp(executed_run))[0]

    values = attrs(agent)
    assert values["gen_ai.operation.name"] == "invoke_agent"
    assert values["gen_ai.agent.id"] == executed_run.agent_version.agent.slug
    assert values["gen_ai.agent.version"] == "1"
    assert values["gen_ai.provider.name"] == "sherlock.python"
    assert (values["gen_ai.usage.input_tokens"], values["gen_ai.usage.output_tokens"]) == (
        "120",
        "30",
    )
    assert values["sherlock.outcome.verdict"] == "failed"
    assert values["sherlock.declared_complete"] is True
    assert values["sherlock.wait.owner"] == "approver"
    assert values["sherlock.wait.owned"] is True
    assert values["sherlock.progress.excluded_wait_windows"] == "3"
    assert values["sherlock.cost.billing_coverage"] == "billed"


def test_tool_spans_carry_the_effect_state_and_the_denial(executed_run):
    _, search, refund, credit = spans_of(run_to_otlp(executed_run))

    assert attrs(search)["gen_ai.tool.call.id"] == "call_1"
    assert "sherlock.tool.effect.state" not in attrs(search)  # read-only: no effect to verify
    assert attrs(refund)["gen_ai.operation.name"] == "execute_tool"
    assert attrs(refund)["gen_ai.tool.description"] == "Refund an order"
    assert attrs(refund)["sherlock.tool.effect.state"] == "verified"
    assert attrs(credit)["sherlock.tool.intentionally_denied"] is True
    assert attrs(credit)["gen_ai.tool.name"] == "billing.apply_credit"


def test_every_check_result_is_a_gen_ai_evaluation_result_event(executed_run):
    agent = spans_of(run_to_otlp(executed_run))[0]

    quality, shape = agent["events"]
    assert quality["name"] == shape["name"] == EVALUATION_EVENT == "gen_ai.evaluation.result"
    assert attrs(quality)["gen_ai.evaluation.name"] == "Quality"
    assert attrs(quality)["gen_ai.evaluation.score.value"] == 0.75
    assert attrs(quality)["gen_ai.evaluation.score.label"] == "scored"
    assert attrs(quality)["gen_ai.evaluation.explanation"] == "rougeL 0.75"
    assert attrs(quality)["sherlock.check.quality_grader"] is True
    assert "gen_ai.evaluation.score.value" not in attrs(shape)  # no score: none invented
    assert attrs(shape)["error.type"] == "check_error"


def test_no_invented_gen_ai_names_anywhere(executed_run):
    export = run_to_otlp(executed_run)
    keys = set()
    for span in spans_of(export):
        keys |= set(attrs(span))
        for event in span.get("events", []):
            keys |= set(attrs(event))

    genai = {key for key in keys if key.startswith("gen_ai.")}
    assert genai <= SEMCONV_1_41
    assert GENAI_ATTRIBUTES <= SEMCONV_1_41
    assert all(key.startswith(("gen_ai.", "sherlock.", "error.")) for key in keys)


def test_an_imported_run_exports_its_effects_as_tool_spans_and_the_command_writes_json(tmp_path):
    run = import_seed_variant("stable v1")
    path = tmp_path / "run.otlp.json"

    call_command(
        "export_run", str(run.pk), "--format", "otlp", "--output", str(path), stderr=io.StringIO()
    )

    spans = spans_of(json.loads(path.read_text()))
    agents = [s for s in spans if s["name"].startswith("invoke_agent")]
    tools = [s for s in spans if s["name"].startswith("execute_tool")]
    assert len(agents) == 5
    assert len(tools) == 6  # one effect per trial, two in the waiting trial
    assert len({s["traceId"] for s in agents}) == 5
    denied = [t for t in tools if attrs(t).get("sherlock.tool.intentionally_denied")]
    assert [attrs(t)["gen_ai.tool.name"] for t in denied] == ["billing.apply_credit"]
    assert run_to_otlp(run) == json.loads(path.read_text())  # deterministic ids
