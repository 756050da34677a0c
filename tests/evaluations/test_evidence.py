"""Outcome and effect evidence: verifiers read the destination, never the transcript;
a verifier that raises, times out or is refused gives `unavailable`/`unknown`, never a verdict.
Running the SQL and HTTP verifiers themselves: tests/agents/test_verifier_runners.py."""

import time

import pytest

from agents.models import Tool
from evaluations.engine.evidence import collect_evidence
from tests.support.verifiers import LEDGER_DB, ledger_database, make_trial

pytestmark = pytest.mark.django_db

LEDGER = {"A-1001": 40}  # what the "destination" holds, read by the python verifiers below


@pytest.fixture(autouse=True)
def _verifiers_allowed(settings, db):
    """The operator allows what these tests name: this module's functions, the loopback host
    and the ledger database (see test_verifier_security.py for what is refused)."""
    settings.SHERLOCK_VERIFIER_CALLABLES = ["tests.evaluations.test_evidence."]
    settings.SHERLOCK_VERIFIER_HOSTS = ["127.0.0.1"]
    settings.SHERLOCK_VERIFIER_DATABASES = [LEDGER_DB]
    with ledger_database():
        yield


# --- Verifiers the cases name (importable by path) -------------------------------------------


def refund_in_ledger(context, order, amount):
    return {"verdict": "verified" if LEDGER.get(order) == amount else "failed", "evidence": LEDGER}


def raises(context):
    raise RuntimeError("ledger unreachable")


def sleeps(context):
    time.sleep(2)
    return True


def forbidden(context):
    raise PermissionError("credential rejected")


def says_unavailable(context):
    return ("unavailable", "collector offline")


def returns_nonsense(context):
    return 42


def refund_for_call(context):
    arguments = context["call"]["arguments"]
    return LEDGER.get(arguments["order"]) == arguments["amount"]


# --- Fixtures ---------------------------------------------------------------------------------


def python(callable_name, **extra):
    return {
        "kind": "python",
        "callable": f"tests.evaluations.test_evidence.{callable_name}",
        **extra,
    }


DONE = {"output": "Refunded.", "tool_calls": [], "declared_complete": True}


# --- Outcome verifiers -------------------------------------------------------------------------


def test_a_python_outcome_verifier_that_finds_the_refund_verifies_it():
    trial = make_trial(python("refund_in_ledger", params={"order": "A-1001", "amount": 40}))

    evidence = collect_evidence(trial, DONE)

    assert evidence["declared_complete"] is True
    assert evidence["outcome_verdict"] == "verified"
    assert evidence["outcome_evidence"]["observed"] == {"A-1001": 40}
    assert "refund_in_ledger" in evidence["outcome_evidence"]["verifier"]


def test_a_declared_completion_whose_refund_is_absent_fails_its_outcome():
    trial = make_trial(python("refund_in_ledger", params={"order": "A-1001", "amount": 250}))

    assert collect_evidence(trial, DONE)["outcome_verdict"] == "failed"


@pytest.mark.parametrize(
    "verifier, reason",
    [
        (python("raises"), "RuntimeError: ledger unreachable"),
        (python("sleeps", timeout_s=0.2), "timed out after 0.2 s"),
        (python("forbidden"), "permission denied: credential rejected"),
        (python("says_unavailable"), "collector offline"),
        (python("returns_nonsense"), "returned int, not a verdict"),
        (python("no_such_function"), "cannot import"),
        ({"kind": "ftp"}, "a verifier needs a kind"),
    ],
)
def test_a_verifier_that_cannot_decide_gives_unavailable_never_a_verdict(verifier, reason):
    trial = make_trial(verifier)

    evidence = collect_evidence(trial, DONE)

    assert evidence["outcome_verdict"] == "unavailable"
    assert reason in evidence["outcome_evidence"]["reason"]


def test_a_case_without_an_outcome_verifier_leaves_the_completion_unverified():
    evidence = collect_evidence(make_trial(), DONE)

    assert evidence["outcome_verdict"] == "unavailable"
    assert evidence["outcome_evidence"]["reason"] == "the case names no outcome verifier"


def test_a_failed_agent_call_declares_nothing():
    evidence = collect_evidence(make_trial(python("refund_in_ledger")), None)

    assert evidence["declared_complete"] is None
    assert evidence["outcome_verdict"] == "unavailable"
    assert evidence["tool_effects"] == []


def test_collect_evidence_never_raises_and_fails_closed_on_every_tool_call():
    trial = make_trial()
    trial.run.agent_version = None  # a broken trial: reading its tool policy raises

    evidence = collect_evidence(
        trial, {"declared_complete": True, "tool_calls": [{"name": "kb.search"}]}
    )

    assert evidence["outcome_verdict"] == "unavailable"
    assert "evidence collection failed" in evidence["outcome_evidence"]["reason"]
    assert [e["state"] for e in evidence["tool_effects"]] == ["unknown"]
    assert evidence["effects_unknown"] == 1


# --- Tool effects -------------------------------------------------------------------------------


def tool(name, effectful=True, verifier=None, high_impact=False):
    return Tool.objects.create(
        name=name, effectful=effectful, verifier=verifier or {}, high_impact=high_impact
    )


def test_each_effectful_call_is_checked_at_the_destination_and_read_only_calls_are_not():
    tools = [
        tool("kb.search", effectful=False),
        tool("refunds.create", verifier=python("refund_for_call")),
        tool("tickets.reply"),  # effectful, but nobody said how to check it
    ]
    trial = make_trial(tools=tools)
    transcript = {
        "declared_complete": True,
        "tool_calls": [
            {"name": "kb.search", "arguments": {"query": "refund"}},
            {
                "id": "call_1",
                "name": "refunds.create",
                "arguments": {"order": "A-1001", "amount": 40},
            },
            {"name": "refunds.create", "arguments": '{"order": "A-1001", "amount": 99}'},
            {"function": {"name": "tickets.reply", "arguments": "{}"}},
            {"name": "shell.exec", "arguments": {}},
        ],
    }

    evidence = collect_evidence(trial, transcript)

    effects = [(e["call"], e["state"]) for e in evidence["tool_effects"]]
    assert effects == [
        ("refunds.create", "verified"),
        ("refunds.create", "failed"),
        ("tickets.reply", "unknown"),
        ("shell.exec", "unknown"),  # not registered: it may have written anywhere
    ]
    assert evidence["tool_effects"][0]["call_id"] == "call_1"
    assert (
        evidence["tool_effects"][3]["evidence"]["reason"] == "tool 'shell.exec' is not registered"
    )
    assert (evidence["effects_verified"], evidence["effects_failed"]) == (1, 1)
    assert evidence["effects_unknown"] == 2


def test_a_call_the_adapter_refused_is_intentionally_denied_not_failed():
    credit = tool("billing.apply_credit", verifier=python("raises"), high_impact=True)
    trial = make_trial(tools=[credit], denied=[credit])
    transcript = {
        "declared_complete": False,
        "tool_calls": [{"name": "billing.apply_credit", "arguments": {}, "denied": True}],
    }

    evidence = collect_evidence(trial, transcript)

    assert evidence["tool_effects"] == [
        {
            "call": "billing.apply_credit",
            "call_id": None,
            "state": "verified",
            "intentionally_denied": True,
            "evidence": {"reason": "refused by the version's tool policy"},
        }
    ]
    assert (evidence["effects_denied"], evidence["effects_failed"]) == (1, 0)


def test_a_denied_tool_that_ran_anyway_is_checked_and_flagged():
    credit = tool("billing.apply_credit", verifier=python("refund_for_call"), high_impact=True)
    trial = make_trial(tools=[credit], denied=[credit])
    transcript = {
        "tool_calls": [{"name": "billing.apply_credit", "arguments": {"order": "K", "amount": 1}}]
    }

    (effect,) = collect_evidence(trial, transcript)["tool_effects"]

    assert effect["intentionally_denied"] is False
    assert effect["state"] == "failed"
    assert effect["evidence"]["policy"] == "the tool is denied for this version but ran"


# --- Windows and waits ---------------------------------------------------------------------------

OWNED = {
    "owner": "billing-approver",
    "decision_requested": "approve $250 credit to K-2207",
    "deadline": "2026-03-02T17:00:00Z",
    "resumable": True,
}


def windows(active_with_delta, active_without, waiting, stale=0):
    return (
        [{"evidence_delta": "ledger row R-1 written"}] * active_with_delta
        + [{"evidence_delta": None}] * active_without
        + [{"waiting": True}] * waiting
        + [{"stale_collector": True}] * stale
    )


def test_windows_inside_an_owned_wait_are_excluded_from_useful_progress():
    transcript = {"declared_complete": False, "windows": windows(2, 0, 4, 1), "wait": OWNED}

    evidence = collect_evidence(make_trial(), transcript)

    assert evidence["progress"] == {
        "active_windows": 2,
        "windows_with_evidence_delta": 2,
        "excluded_wait_windows": 4,
        "stale_collector_windows": 1,
    }
    assert evidence["wait"] == {**OWNED, "decision": None}
    assert (evidence["active_windows"], evidence["excluded_wait_windows"]) == (2, 4)
    assert evidence["stalled_wait_windows"] == 0


@pytest.mark.parametrize("missing", ["owner", "decision_requested", "deadline", "resumable"])
def test_a_wait_that_does_not_name_everything_is_a_stall(missing):
    wait = {key: value for key, value in OWNED.items() if key != missing}
    transcript = {"windows": windows(1, 1, 3), "wait": wait}

    evidence = collect_evidence(make_trial(), transcript)

    assert (evidence["active_windows"], evidence["windows_with_evidence_delta"]) == (5, 1)
    assert (evidence["stalled_wait_windows"], evidence["excluded_wait_windows"]) == (3, 0)


# --- Malformed transcripts and large destinations ------------------------------------------------


def test_tool_calls_that_are_not_a_list_are_one_unknown_effect_not_one_per_character():
    trial = make_trial(tools=[tool("email.send", verifier=python("refund_for_call"))])

    evidence = collect_evidence(trial, {"declared_complete": True, "tool_calls": "email.send"})

    assert [(e["call"], e["state"]) for e in evidence["tool_effects"]] == [("?", "unknown")]
    assert evidence["tool_effects"][0]["evidence"]["reason"] == "tool_calls is a str, not a list"
    assert evidence["effects_unknown"] == 1
