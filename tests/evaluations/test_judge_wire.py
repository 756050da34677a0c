"""What reaches the wire: the judge's requests go out through the OpenAI SDK's own client
(evaluations/judge/sdk.py), as the SDK sends a chat completion, with nothing added."""

from django.conf import settings

from evaluations.judge.schema import bound_schema
from tests.support.judge_fixtures import JUDGE_MODEL
from tests.support.judging import GOOD, RELEVANCE, VARIABLES, fast_judge
from tests.support.llm_server import server_error


def test_the_request_is_the_sdks_chat_completion_with_the_question_and_nothing_else(llm_server):
    llm_server.script([GOOD])
    judge = fast_judge(llm_server, api_key="sk-wire", cache_size=0)

    assert judge.ask(RELEVANCE, VARIABLES).data == GOOD

    ((method, path, headers),) = llm_server.log
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert headers["authorization"] == "Bearer sk-wire"
    assert headers["user-agent"].startswith("OpenAI/Python")
    assert headers["content-type"] == "application/json"
    (body,) = llm_server.requests
    # The completion cap travels as max_tokens to a server that is not OpenAI's (sdk.py).
    assert set(body) == {
        "model",
        "messages",
        "response_format",
        "temperature",
        "seed",
        "max_tokens",
    }
    assert (body["model"], body["temperature"], body["seed"]) == (
        JUDGE_MODEL,
        0,
        settings.SHERLOCK_JUDGE_SEED,
    )
    assert body["max_tokens"] == 256  # a reason and a score: the smallest budget
    assert body["response_format"]["json_schema"] == {
        "name": "test_relevance",
        "schema": bound_schema(RELEVANCE.schema, {}),  # with the reason's maxLength
        "strict": True,
    }


def test_the_sdk_retries_are_off_and_one_failed_attempt_is_one_request(llm_server):
    llm_server.script([server_error(400)])

    answer = fast_judge(llm_server).ask(RELEVANCE, VARIABLES)

    assert not answer.ok and answer.error_code == "http_error"
    assert len(llm_server.log) == 1
    assert fast_judge(llm_server).sdk.max_retries == 0
