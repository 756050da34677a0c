"""Each breach row of the production contract driven from real exporter spans (the SDK's own
spans, encoded by the stock exporter's encoder, posted to the receiver): completion, the trial
built from the spans, online scoring and the breach check, nothing written by hand. A breach
appears where the agent really breaks, and only there: the same traffic from a healthy agent
breaches nothing."""

import json
from decimal import Decimal

import pytest

from agents.models import Tool
from evaluations.models import ModelPrice
from governance.models import PublishingPolicy
from production.actions.create_online_rule import CreateOnlineRule
from production.models import RollbackProposal, Trace
from production.online import scoring
from production.online.contract import production_contract
from tests.support import factories, online
from tests.support.governance import TOOLS_CHECK, tool_case
from tests.support.otel_clients import export_body, finished_spans

TRACES = 32  # above the 30 a Wilson interval needs


def outcome_in_answer(context, **_):
    """The outcome verifier: verified when the answer says the refund was made."""
    return "refund made" in (context["transcript"].get("output") or "")


def refund_effect(context, **_):
    """The effect verifier: verified when the call returned a refund id."""
    result = context["call"].get("result") or {}
    return ("verified", "refund found") if result.get("refund") else ("failed", "no refund")


@pytest.fixture
def world(db, admin_user, settings):
    settings.SHERLOCK_VERIFIER_CALLABLES = [f"{__name__}."]
    gate = factories.dataset("gate-basics")
    factories.dataset_version(gate, cases=[tool_case("refund", "Refund?")], checks=[TOOLS_CHECK])
    policy = PublishingPolicy.objects.create(
        name="Default", created_by=admin_user, min_tool_effect_integrity=0.9
    )
    policy.gate_datasets.add(gate)
    author = factories.user("author", role="Builder")
    publisher = factories.user("pub", role="Publisher")
    agent = factories.agent("refund-agent")
    online.live_after(agent, author, publisher)
    Tool.objects.create(
        name="refunds_create",
        effectful=True,
        verifier={"kind": "python", "callable": f"{__name__}.refund_effect"},
    )
    Tool.objects.create(name="crm_note", effectful=True)  # no verifier: its effect is unknown
    Tool.objects.create(name="finish_task")  # the completion tool: no effect of its own
    ModelPrice.objects.create(
        model="small", usd_per_million_input=Decimal("1"), usd_per_million_output=Decimal("4")
    )
    CreateOnlineRule(
        acting_user=author,
        agent=agent,
        checks=[{"label": "shape", "kind": "output_type", "params": {"type": "text"}}],
        outcome_check={"kind": "python", "callable": f"{__name__}.outcome_in_answer"},
        completion_tool="finish_task",
    ).execute()
    return {"agent": agent, "key": factories_key(author)}


def factories_key(user):
    from tests.support.governance import api_key

    return api_key(user)[1]


def turn(answer, tool, result, declare):
    """One agent turn as the SDK records it: a model call asking for `tool`, the tool's span
    with its result, the answer; `declare` is how the trace declares completion (the span
    attribute, or calling the rule's completion tool)."""

    def build(tracer):
        with tracer.start_as_current_span("invoke_agent refunds") as root:
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            if declare == "attribute":
                root.set_attribute("sherlock.declared_complete", True)
            with tracer.start_as_current_span("chat small") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute(
                    "gen_ai.input.messages",
                    json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]),
                )
            calls = [tool] + (["finish_task"] if declare == "tool" else [])
            for index, name in enumerate(calls):
                with tracer.start_as_current_span(f"execute_tool {name}") as span:
                    span.set_attribute("gen_ai.operation.name", "execute_tool")
                    span.set_attribute("gen_ai.tool.name", name)
                    span.set_attribute("gen_ai.tool.call.id", f"call_{index}")
                    span.set_attribute("gen_ai.tool.call.arguments", "{}")
                    span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
            with tracer.start_as_current_span("chat small") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.request.model", "small")
                chat.set_attribute("gen_ai.usage.input_tokens", 120)
                chat.set_attribute("gen_ai.usage.output_tokens", 30)
                chat.set_attribute(
                    "gen_ai.output.messages",
                    json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
                    ),
                )

    return build


HEALTHY = ("Your refund made it through.", "refunds_create", {"refund": "R-1"})
BROKEN = {
    "false_success": ("All done!", "refunds_create", {"refund": "R-1"}),
    "unknown_effects": ("Your refund made it through.", "crm_note", {"ok": True}),
    "floors": ("Your refund made it through.", "refunds_create", {"error": "declined"}),
}


def send(client, world, shape, declare="attribute", n=TRACES):
    resource = {"sherlock.agent": "refund-agent"}
    spans = []
    for _ in range(n):
        spans += finished_spans(resource, turn(*shape, declare))
    response = client.post(
        "/api/v1/v1/traces",
        data=export_body(spans),
        content_type="application/x-protobuf",
        HTTP_AUTHORIZATION=f"Token {world['key']}",
    )
    assert response.status_code == 200
    assert Trace.objects.filter(state="complete").count() >= n
    scoring.sweep()  # scores every complete trace, then looks for a breach


@pytest.mark.parametrize("declare", ["attribute", "tool"])
def test_a_healthy_agent_breaches_nothing(client, world, declare):
    send(client, world, HEALTHY, declare)
    window = production_contract(world["agent"]).windows[0]
    assert window.result.runs == TRACES
    assert window.result.declared_complete == TRACES  # completion is measured from traces
    assert window.result.verified_outcomes == TRACES
    assert window.result.tool_effect_integrity.num == TRACES
    assert window.breaches == [] and not RollbackProposal.objects.exists()
    assert not any("false success" in line for line in window.unmeasured)
    # Cost priced from the reported tokens with the team's price is recorded cost: coverage
    # passes, and the window says the cost is priced, not billed.
    assert window.result.gate("coverage").status == "pass", window.result.gate("coverage")
    assert window.result.release == "pass"
    assert any(line.startswith("cost per verified outcome") for line in window.unmeasured)


@pytest.mark.parametrize("row", ["false_success", "unknown_effects", "floors"])
def test_each_breach_row_appears_where_the_agent_breaks(client, world, row):
    send(client, world, BROKEN[row])
    contract = production_contract(world["agent"])
    gates = {breach["gate"] for breach in contract.windows[0].breaches}
    assert row in gates, contract.windows[0].breaches
    assert RollbackProposal.objects.get().breach["gate"] in gates


def test_traces_that_declare_nothing_say_false_success_is_not_measured(client, world):
    send(client, world, HEALTHY, declare="none")
    window = production_contract(world["agent"]).windows[0]
    assert window.result.declared_complete == 0
    assert any(line.startswith("false success: not measured") for line in window.unmeasured)
