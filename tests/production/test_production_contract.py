"""The contract over production: the live version's five measures over sliding windows (same
aggregates, Wilson intervals and evidence states as a run), beside its gate run; a hard gate
breached with enough evidence sends `production.breach` (signed, to a loopback receiver) and
opens one rollback proposal, which a Publisher confirms (the previous version published
again through RollBackVersion) or dismisses with a reason, audited, never automatically."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from governance.actions.create_webhook import CreateWebhook
from governance.actions.request_publication import RequestPublication
from governance.models import AuditEntry, PublishingPolicy
from production.actions.confirm_rollback_proposal import ConfirmRollbackProposal
from production.actions.create_online_rule import CreateOnlineRule
from production.actions.dismiss_rollback_proposal import DismissRollbackProposal
from production.choices import ProposalState
from production.models import RollbackProposal, TraceScore
from production.online import scoring
from production.online.breach import look_for_breach
from production.online.contract import production_contract
from sherlock.core.errors import ActionConflict, ActionDenied, ActionInvalid
from tests.support import factories, online
from tests.support.governance import REASON, TOOLS_CHECK, finish_gate_runs, tool_case
from tests.support.loopback_webhook import LoopbackReceiver


def refund_in_output(context, **_):
    """The outcome verifier of these tests: verified when the answer mentions a refund."""
    return "refund" in (context["transcript"].get("output") or "")


GOOD = {"input": "Refund A-1", "output": "refund sent", "declared_complete": True}
FALSE_SUCCESS = {"input": "Refund A-2", "output": "all done!", "declared_complete": True}


@pytest.fixture
def world(db, admin_user, settings):
    settings.SHERLOCK_VERIFIER_CALLABLES = ["tests.production.test_production_contract."]
    gate = factories.dataset("gate-basics")
    factories.dataset_version(gate, cases=[tool_case("refund", "Refund?")], checks=[TOOLS_CHECK])
    policy = PublishingPolicy.objects.create(name="Default", created_by=admin_user)
    policy.gate_datasets.add(gate)
    author = factories.user("author", role="Builder")
    publisher = factories.user("pub", role="Publisher")
    agent = factories.agent("refund-agent")
    previous, live = online.live_after(agent, author, publisher)
    CreateOnlineRule(
        acting_user=author,
        agent=agent,
        checks=[{"label": "shape", "kind": "output_type", "params": {"type": "text"}}],
        outcome_check={"kind": "python", "callable": f"{__name__}.refund_in_output"},
    ).execute()
    return {
        "agent": agent,
        "previous": previous,
        "live": live,
        "author": author,
        "publisher": publisher,
    }


def traces(world, transcript, n, **extra):
    rows = [
        online.trace(world["agent"], extra.pop("version", world["live"]), transcript, **extra)
        for _ in range(n)
    ]
    return rows


def score(rows, capture=None):
    if capture is None:
        return scoring.score_traces([row.pk for row in rows])
    with capture(execute=True):
        return scoring.score_traces([row.pk for row in rows])


def test_the_windows_count_the_live_versions_scored_traces(world):
    day_ago = timezone.now() - timedelta(hours=30)
    score(traces(world, GOOD, 3))
    score(traces(world, GOOD, 2, completed_at=day_ago))
    score(traces(world, FALSE_SUCCESS, 1, version=world["previous"]))  # not the live version
    contract = production_contract(world["agent"])
    last_day, last_week = contract.windows
    assert (last_day.name, last_week.name) == ("24 h", "7 d")
    assert (last_day.result.runs, last_week.result.runs) == (3, 5)
    assert last_week.result.false_success.num == 0
    assert last_week.result.verified_outcomes == 5
    # Fewer than 30: raw counts only, no interval and no breach (not enough evidence).
    assert last_week.result.false_success.wilson95 is None and contract.breaches == []
    # Beside the gate run the live version was published on.
    assert contract.gate is not None and contract.gate.declared_complete == 1
    assert contract.gate_request.agent_version == world["live"]


def test_few_false_successes_are_not_yet_a_breach(world):
    score(traces(world, FALSE_SUCCESS, 5) + traces(world, GOOD, 20))
    assert not RollbackProposal.objects.exists()
    window = production_contract(world["agent"]).windows[0]
    assert window.result.false_success.num == 5 and window.breaches == []


def test_a_breach_sends_the_webhook_and_opens_one_proposal(
    world, admin_user, django_capture_on_commit_callbacks
):
    with LoopbackReceiver() as receiver:
        CreateWebhook(
            acting_user=admin_user, url=receiver.url, events=["production.breach"]
        ).execute()
        score(
            traces(world, FALSE_SUCCESS, 6) + traces(world, GOOD, 30),
            django_capture_on_commit_callbacks,
        )
        (request,) = receiver.received
    proposal = RollbackProposal.objects.get()
    assert (proposal.state, proposal.from_version, proposal.to_version) == (
        ProposalState.OPEN,
        world["live"],
        world["previous"],
    )
    breach = proposal.breach
    assert (breach["gate"], breach["num"], breach["den"], breach["window"]) == (
        "false_success",
        6,
        36,
        "24 h",
    )
    assert breach["wilson95"][0] > breach["limit"] == 0.0
    assert request["headers"]["x-sherlock-event"] == "production.breach"
    body = json.loads(request["body"])
    assert body["data"]["agent"] == "refund-agent"
    assert body["data"]["rollback_proposal"] == proposal.pk
    assert body["data"]["previous_version"] == world["previous"].number
    entry = AuditEntry.objects.get(action="production.rollback_proposal.open")
    assert entry.actor is None and entry.after["breach"]["gate"] == "false_success"
    # Never automatic: the live version is still live.
    world["agent"].refresh_from_db()
    assert world["agent"].live_version == world["live"]
    # One open proposal at a time, however much more evidence comes.
    score(traces(world, FALSE_SUCCESS, 10))
    assert RollbackProposal.objects.count() == 1


def breached(world):
    score(traces(world, FALSE_SUCCESS, 6) + traces(world, GOOD, 30))
    return RollbackProposal.objects.get()


def test_a_publisher_confirms_the_rollback_through_the_gate(world):
    proposal = breached(world)
    publisher = world["publisher"]
    # The previous version goes back through the gate: no fresh passed request yet.
    with pytest.raises(ActionConflict):
        ConfirmRollbackProposal(acting_user=publisher, proposal=proposal).execute()
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.OPEN
    assert AuditEntry.objects.filter(action="governance.version.refused").exists()
    again = RequestPublication(acting_user=world["author"], agent_version=world["previous"])
    finish_gate_runs(again.execute())
    ConfirmRollbackProposal(acting_user=publisher, proposal=proposal, reason=REASON).execute()
    proposal.refresh_from_db()
    world["agent"].refresh_from_db()
    assert proposal.state == ProposalState.CONFIRMED and proposal.decided_by == publisher
    assert world["agent"].live_version == world["previous"]
    assert AuditEntry.objects.filter(
        action="governance.version.rollback", target_id=str(world["previous"].pk)
    ).exists()
    confirm = AuditEntry.objects.get(action="production.rollback_proposal.confirm")
    assert confirm.actor == publisher and confirm.after["live_version"] == 1


def test_a_publisher_dismisses_with_a_reason_and_it_is_not_reopened_at_once(world):
    proposal = breached(world)
    with pytest.raises(ActionInvalid) as refused:
        DismissRollbackProposal(
            acting_user=world["publisher"], proposal=proposal, reason="no"
        ).execute()
    assert refused.value.field == "reason"
    DismissRollbackProposal(
        acting_user=world["publisher"], proposal=proposal, reason=REASON
    ).execute()
    proposal.refresh_from_db()
    assert (proposal.state, proposal.reason) == (ProposalState.DISMISSED, REASON)
    assert AuditEntry.objects.get(action="production.rollback_proposal.dismiss").reason == REASON
    assert look_for_breach(world["agent"].pk) is None
    later = timezone.now() + timedelta(hours=25)
    assert look_for_breach(world["agent"].pk, now=later) is not None


@pytest.mark.parametrize("role", ["Editor", "Builder", None])
def test_only_a_publisher_decides_a_proposal(world, role):
    proposal = breached(world)
    user = factories.user(f"u-{role}", role=role)
    with pytest.raises(ActionDenied):
        ConfirmRollbackProposal(acting_user=user, proposal=proposal).execute()
    with pytest.raises(ActionDenied):
        DismissRollbackProposal(acting_user=user, proposal=proposal, reason=REASON).execute()
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.OPEN
    refused = AuditEntry.objects.filter(action="production.rollback_proposal.refused", actor=user)
    assert sorted(e.after["verb"] for e in refused) == ["confirm", "dismiss"]


def test_capped_and_skipped_traces_are_not_evidence(world):
    rows = traces(world, FALSE_SUCCESS, 3)
    score(rows)
    TraceScore.objects.filter(trace=rows[0]).update(state="capped")
    window = production_contract(world["agent"]).windows[0]
    assert window.result.runs == 2
