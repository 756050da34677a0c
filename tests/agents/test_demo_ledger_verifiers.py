"""The demo's ledger verifiers tie an entry to the call that wrote it by the id the tool
returned: two trials running at once write identical entries a fraction of a millisecond apart,
and one trial's entry must never verify the other's call or outcome. A call that returned no id
is `unknown` when an entry it could be is there (`failed` when none is), never `verified`."""

from datetime import UTC, datetime, timedelta

import pytest

from agents import demo
from agents.models import Tool
from agents.verifiers.runners import run_verifier
from agents.verifiers.spec import EFFECT, OUTCOME
from evaluations.engine.evidence import collect_evidence
from evaluations.models import Trial
from tests.support.verifiers import make_trial

REPLY = {"kind": "python", "callable": "agents.demo.effect_in_ledger"}
REPLY_PARAMS = {"kind": "reply", "fields": ["topic"]}
HAND_OFF = {"input": "Can you write me a poem about llamas?"}  # no topic: "I am not sure"


@pytest.fixture(autouse=True)
def ledger(settings, tmp_path):
    settings.SHERLOCK_DEMO_LEDGER = str(tmp_path / "ledger.jsonl")
    return tmp_path / "ledger.jsonl"


def started(seconds_ago=1):
    return (datetime.now(UTC) - timedelta(seconds=seconds_ago)).isoformat()


def two_trials_at_once():
    """Two fast support-bot trials of the same case: identical hand-off replies, written one
    right after the other, each trial's transcript holding its own reply's id."""
    since = started()
    first, second = (demo.support_bot(HAND_OFF, style="fast", delay_ms=0) for _ in range(2))
    return since, first, second


def reply_call(transcript):
    (call,) = [c for c in transcript["tool_calls"] if c["name"] == "tickets.reply"]
    return call


def effect(call, since, result=...):
    context = {
        "trial": {"started_at": since},
        "call": {**call, "result": call["result"] if result is ... else result},
    }
    return run_verifier({**REPLY, "params": REPLY_PARAMS}, context, EFFECT)


def outcome(transcript, since, **expected):
    spec = {"kind": "python", "callable": "agents.demo.outcome_in_ledger", "params": expected}
    context = {"trial": {"started_at": since}, "transcript": transcript}
    return run_verifier(spec, context, OUTCOME)


def test_two_identical_concurrent_replies_each_verify_their_own_call():
    since, first, second = two_trials_at_once()
    first_id, second_id = reply_call(first)["result"], reply_call(second)["result"]
    assert first_id != second_id

    for transcript, own in ((first, first_id), (second, second_id)):
        state, evidence = effect(reply_call(transcript), since)
        assert state == "verified"
        assert evidence["observed"]["entry"] == own  # not the latest identical entry


def test_a_call_that_returned_no_id_is_unknown_while_an_identical_entry_is_there():
    since, first, _ = two_trials_at_once()

    for result in (None, "ok", {"status": "sent"}):
        state, evidence = effect(reply_call(first), since, result=result)
        assert state == "unknown"
        assert "returned no ledger id" in evidence["reason"]
        assert "another trial's" in evidence["reason"]


def test_a_call_that_returned_no_id_fails_when_no_entry_it_could_be_was_written():
    since = started()
    call = {"name": "tickets.reply", "arguments": {"topic": None}, "result": None}

    state, evidence = effect(call, since)

    assert state == "failed"
    assert evidence["observed"]["found"] == "no reply entry written during the trial"


@pytest.mark.parametrize(
    ("change", "found"),
    [
        ({"result": "R-00000000"}, "no ledger entry has the id the call returned"),
        ({"arguments": {"topic": "refund"}}, {"topic": None}),
    ],
)
def test_the_returned_id_must_name_an_entry_holding_the_calls_arguments(change, found):
    since, first, _ = two_trials_at_once()
    call = {**reply_call(first), **change}
    found = {"entry": call["result"], **found} if isinstance(found, dict) else found

    state, evidence = effect(call, since)

    assert state == "failed"
    assert evidence["observed"]["found"] == found


def test_an_entry_older_than_the_trial_is_not_its_effect():
    _, first, _ = two_trials_at_once()

    state, evidence = effect(reply_call(first), started(seconds_ago=-60))

    assert state == "failed"
    assert "predates the trial" in evidence["observed"]["found"]


def test_each_trials_outcome_is_its_own_entry_and_a_strangers_verifies_nothing():
    since, first, second = two_trials_at_once()

    for transcript in (first, second):
        state, evidence = outcome(transcript, since, kind="reply", topic=None)
        assert state == "verified"
        assert evidence["observed"]["entry"] == reply_call(transcript)["result"]

    # A trial whose calls returned no id, beside two identical entries: no verdict.
    silent = {**first, "tool_calls": [{**reply_call(first), "result": None}]}
    state, evidence = outcome(silent, since, kind="reply", topic=None)
    assert state == "unavailable"
    assert "2 reply entries" in evidence["reason"] and "another trial's" in evidence["reason"]

    # Nothing of the kind written during the trial: failed, whoever's ids it holds.
    state, _ = outcome(first, since, kind="refund", order="A-1001", amount=40)
    assert state == "failed"


@pytest.mark.django_db
def test_collect_evidence_names_each_trials_own_reply():
    """The path of the reviewer's trial page: two repetitions of one case in one run, evidence
    collected for each after both replies were written."""
    reply = Tool.objects.create(
        name="tickets.reply", effectful=True, verifier={**REPLY, "params": REPLY_PARAMS}
    )
    first = make_trial(tools=[reply])
    second = Trial.objects.select_related("run__agent_version", "case_version__case").get(
        pk=Trial.objects.create(
            run=first.run,
            case=first.case,
            case_version=first.case_version,
            repetition=2,
            started_at=first.started_at,
        ).pk
    )
    transcripts = [demo.support_bot(HAND_OFF, style="fast", delay_ms=0) for _ in range(2)]

    for trial, transcript in zip((first, second), transcripts, strict=True):
        (effect_of_reply,) = collect_evidence(trial, transcript)["tool_effects"]
        assert effect_of_reply["state"] == "verified"
        own = reply_call(transcript)["result"]
        assert effect_of_reply["evidence"]["observed"]["entry"] == own
