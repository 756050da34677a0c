"""The loopback LLM server speaks the OpenAI wire format that the official SDK accepts.

These tests use the SDK as a plain client (its own retries off), so every fault the judge and
agent tests rely on is shown to reach the SDK as the error class production code would see.
"""

import json
import random
import threading

import httpx2
import jsonschema
import openai
import pytest
from pydantic import BaseModel

from tests.support.llm_server import (
    Fault,
    LLMServer,
    Reply,
    hang,
    instance_for_schema,
    malformed,
    rate_limited,
    refusal,
    server_error,
    tool_call,
)

SCORE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"reason": {"type": "string"}, "score": {"type": "number"}},
    "required": ["reason", "score"],
}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture
def sdk(llm_server):
    return openai.OpenAI(base_url=llm_server.url, api_key="sk-test", max_retries=0, timeout=2)


def ask(sdk, content="What is the weather in Paris?", **kwargs):
    return sdk.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": content}], **kwargs
    )


def test_it_answers_a_tool_call_round_trip(sdk, llm_server):
    llm_server.script([tool_call("get_weather", {"city": "Paris"}), "It is sunny in Paris."])

    first = ask(sdk, tools=[WEATHER_TOOL])
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.type == "function"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}

    second = sdk.chat.completions.create(
        model="gpt-test",
        tools=[WEATHER_TOOL],
        messages=[
            {"role": "user", "content": "What is the weather in Paris?"},
            choice.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": '{"sky": "clear"}'},
        ],
    )
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "It is sunny in Paris."
    # The server saw the tool result the client sent back.
    assert llm_server.requests[1]["messages"][-1]["tool_call_id"] == call.id


def test_it_answers_several_tool_calls_at_once(sdk, llm_server):
    llm_server.script(
        [
            Reply(
                tool_calls=[
                    {"name": "get_weather", "arguments": {"city": "Paris"}},
                    {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                ]
            )
        ]
    )

    calls = ask(sdk, tools=[WEATHER_TOOL]).choices[0].message.tool_calls

    assert [json.loads(call.function.arguments)["city"] for call in calls] == ["Paris", "Rome"]
    assert len({call.id for call in calls}) == 2


def test_it_serializes_a_scripted_dict_as_a_json_schema_answer(sdk, llm_server):
    llm_server.script([{"reason": "on topic", "score": 0.75}])
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "score", "schema": SCORE_SCHEMA, "strict": True},
    }

    completion = ask(sdk, response_format=response_format)

    assert json.loads(completion.choices[0].message.content) == {
        "reason": "on topic",
        "score": 0.75,
    }
    assert llm_server.requests[0]["response_format"] == response_format


def test_the_sdk_parses_a_structured_output_into_a_model(sdk, llm_server):
    class Score(BaseModel):
        reason: str
        score: float

    llm_server.script([{"reason": "fine", "score": 1.0}])

    completion = sdk.chat.completions.parse(
        model="gpt-test",
        messages=[{"role": "user", "content": "Grade this."}],
        response_format=Score,
    )

    assert completion.choices[0].message.parsed == Score(reason="fine", score=1.0)


def test_it_counts_tokens_roughly_from_the_request_and_the_answer(sdk, llm_server):
    llm_server.script(["x" * 40])

    usage = ask(sdk, content="y" * 400).usage

    assert 100 <= usage.prompt_tokens <= 110  # 400 characters, about 4 a token
    assert usage.completion_tokens == 10
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_scripted_usage_is_sent_as_is(sdk, llm_server):
    llm_server.script([Reply(content="ok", usage=(1234, 56))])

    usage = ask(sdk).usage

    assert (usage.prompt_tokens, usage.completion_tokens) == (1234, 56)


def test_a_refusal_arrives_as_message_refusal(sdk, llm_server):
    llm_server.script([refusal("I can't grade that.")])

    message = ask(sdk).choices[0].message

    assert message.refusal == "I can't grade that."
    assert message.content is None


def test_a_malformed_answer_is_sent_verbatim(sdk, llm_server):
    llm_server.script([malformed("score: high")])

    assert ask(sdk).choices[0].message.content == "score: high"


def test_429_carries_retry_after(sdk, llm_server):
    llm_server.script([rate_limited(retry_after=2)])

    with pytest.raises(openai.RateLimitError) as caught:
        ask(sdk)

    assert caught.value.response.headers["retry-after"] == "2"
    assert caught.value.response.headers["retry-after-ms"] == "2000"
    assert caught.value.body["type"] == "rate_limit_error"


def test_500_is_an_internal_server_error(sdk, llm_server):
    llm_server.script([server_error(), server_error(503)])

    with pytest.raises(openai.InternalServerError):
        ask(sdk)
    with pytest.raises(openai.InternalServerError) as caught:
        ask(sdk)
    assert caught.value.status_code == 503


def test_a_hang_outlasts_the_client_timeout(sdk, llm_server):
    llm_server.script([hang(30), "after the hang"])
    # The client gives up on its own timeout: had it waited for the 30 s hang to end, the closed
    # connection would be another error.
    with pytest.raises(openai.APITimeoutError):
        ask(sdk, timeout=0.5)
    # The server keeps serving other requests while the hung one waits.
    assert ask(sdk).choices[0].message.content == "after the hang"


def test_a_custom_fault_sends_its_status_headers_and_body(sdk, llm_server):
    llm_server.script([Fault(status=400, body={"error": {"message": "bad schema"}})])

    with pytest.raises(openai.BadRequestError) as caught:
        ask(sdk)

    assert "bad schema" in str(caught.value)


def test_it_records_every_request_in_order(sdk, llm_server):
    ask(sdk, content="first")
    ask(sdk, content="second", temperature=0, seed=7)

    assert [r["messages"][0]["content"] for r in llm_server.requests] == ["first", "second"]
    assert llm_server.requests[1]["temperature"] == 0
    assert llm_server.requests[1]["seed"] == 7
    method, path, headers = llm_server.log[0]
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert headers["authorization"] == "Bearer sk-test"


def test_a_responder_answers_when_the_script_is_empty(sdk, llm_server):
    llm_server.script(["scripted"])
    llm_server.responder = lambda request: f"echo {request['messages'][0]['content']}"

    assert ask(sdk, content="a").choices[0].message.content == "scripted"
    assert ask(sdk, content="b").choices[0].message.content == "echo b"


def test_by_default_it_answers_any_schema_with_a_valid_instance(sdk, llm_server):
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "score", "schema": SCORE_SCHEMA, "strict": True},
    }

    content = ask(sdk, response_format=response_format).choices[0].message.content

    jsonschema.validate(json.loads(content), SCORE_SCHEMA)


def test_without_responder_an_exhausted_script_is_a_500(sdk, llm_server):
    llm_server.responder = None

    with pytest.raises(openai.InternalServerError) as caught:
        ask(sdk)

    assert "ran out" in str(caught.value)


def test_a_streaming_request_is_refused_plainly(sdk, llm_server):
    with pytest.raises(openai.BadRequestError) as caught:
        ask(sdk, stream=True)

    assert "does not stream" in str(caught.value)


def test_without_recording_it_only_counts_requests():
    with LLMServer(record=False) as server:
        client = openai.OpenAI(base_url=server.url, api_key="sk-test", max_retries=0)
        ask(client)
        ask(client)

        assert server.request_count == 2
        assert server.requests == [] and server.log == []


def test_it_lists_models(sdk, llm_server):
    assert [model.id for model in sdk.models.list()] == [llm_server.model]


def test_latency_delays_each_answer_without_blocking_the_others(sdk, llm_server):
    llm_server.latency = 0.3
    results = []

    def one(n):
        results.append(ask(sdk, content=str(n)).choices[0].message.content)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == 8
    # Each answer waited out its latency side by side with the others, not one after another.
    assert llm_server.peak_in_flight > 1


def test_reset_forgets_script_requests_and_latency(sdk, llm_server):
    llm_server.script(["a", "b"])
    llm_server.latency = 5
    llm_server.responder = None
    llm_server.reset()

    assert llm_server.pending == 0
    assert llm_server.requests == []
    assert llm_server.latency == 0
    assert ask(sdk).choices[0].message.content == "ok"


def test_it_works_as_a_context_manager_on_a_free_port():
    with LLMServer() as one, LLMServer() as two:
        assert one.port != two.port
        response = httpx2.get(f"{one.url}/models")
        assert response.status_code == 200
    with pytest.raises(RuntimeError):
        one.url  # noqa: B018 - a stopped server has no URL


@pytest.mark.parametrize(
    "schema",
    [
        SCORE_SCHEMA,
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "statements": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "statement": {"type": "string", "minLength": 30},
                            "verdict": {"type": "integer", "enum": [0, 1]},
                            "supported": {"type": "boolean"},
                        },
                        "required": ["statement", "verdict", "supported"],
                    },
                    "minItems": 2,
                    "maxItems": 3,
                },
                "category": {"enum": ["A", "B", "C"]},
                "confidence": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
                "steps": {"type": "integer", "minimum": 3, "maximum": 5},
                "note": {"type": ["string", "null"], "maxLength": 5},
                "kind": {"const": "verdicts"},
            },
            "required": ["statements", "category", "confidence", "steps", "note", "kind"],
        },
        {
            "$defs": {
                "claim": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}, "ok": {"type": "boolean"}},
                    "required": ["text", "ok"],
                    "additionalProperties": False,
                }
            },
            "type": "object",
            "properties": {
                "claims": {"type": "array", "items": {"$ref": "#/$defs/claim"}},
                "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            },
            "required": ["claims", "either"],
            "additionalProperties": False,
        },
    ],
)
def test_instance_for_schema_is_valid(schema):
    for seed in range(20):
        instance = instance_for_schema(schema, random.Random(seed))
        jsonschema.validate(instance, schema)


def test_instance_for_schema_makes_one_to_three_array_items():
    schema = {"type": "array", "items": {"type": "string"}}
    rng = random.Random(0)
    sizes = {len(instance_for_schema(schema, rng)) for _ in range(50)}
    assert sizes == {1, 2, 3}
