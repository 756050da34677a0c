"""One reader of a transcript's tool calls (sherlock.core.transcripts): every accepted shape gives
the same ToolCall, and anything else is a ValueError, never a guess."""

import pytest

from sherlock.core.transcripts import ToolCall, read_call, tool_calls

REFUND = ToolCall(name="orders.refund", arguments={"order": "A-1001"}, id="call_1")


@pytest.mark.parametrize(
    "call",
    [
        {"id": "call_1", "name": "orders.refund", "arguments": {"order": "A-1001"}},
        {"id": "call_1", "name": "orders.refund", "arguments": '{"order": "A-1001"}'},
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "orders.refund", "arguments": '{"order": "A-1001"}'},
        },
        {"id": "call_1", "tool_name": "orders.refund", "tool_input": {"order": "A-1001"}},
    ],
    ids=["plain", "plain, JSON-string arguments", "openai", "vertex"],
)
def test_every_accepted_shape_reads_as_the_same_call(call):
    assert read_call(call) == REFUND


def test_a_call_keeps_its_result_and_an_adapters_refusal():
    call = {"name": "email.send", "arguments": {}, "result": "refused", "denied": True}
    assert read_call(call) == ToolCall("email.send", {}, None, "refused", True)


def test_arguments_that_are_not_json_stay_the_string_they_are():
    assert read_call({"name": "search", "arguments": "cats"}).arguments == "cats"


def test_a_call_without_arguments_leaves_them_unspecified():
    assert read_call({"name": "search"}).arguments is None


@pytest.mark.parametrize("call", ["orders.refund", {"arguments": {}}, {"name": ""}, None])
def test_a_call_in_no_accepted_shape_is_refused(call):
    with pytest.raises(ValueError):
        read_call(call)


def test_a_transcript_without_tool_calls_records_none_and_an_empty_list_records_no_call():
    assert tool_calls({"output": "hi"}) is None
    assert tool_calls({"tool_calls": []}) == []


def test_tool_calls_that_are_not_a_list_are_refused_not_read_per_character():
    with pytest.raises(ValueError, match="tool_calls must be a list of tool calls, got str"):
        tool_calls({"tool_calls": "email.send"})
