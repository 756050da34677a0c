"""The judge client against the loopback server: answers, faults, repair, cache and cost.

The rule every fault test shows: a judge failure is never a score (`ok` is False, `data` is
None, the error says why) and every attempt is stored as a `JudgeCall` row with its tokens,
latency, status and error.
"""

import asyncio
import dataclasses
import socket
import threading
import time
from decimal import Decimal

import pytest
from django.conf import settings

from evaluations.judge import (
    JudgeClient,
    MemoryRecorder,
    get_default_judge,
    reset_default_judges,
)
from evaluations.judge.cache import canonical_json, sha256
from evaluations.judge.retry import REFUSED_MAX_WAIT, RetryPolicy
from evaluations.judge.schema import bound_schema
from evaluations.judge.sdk import chat_completion, openai_client
from evaluations.models import CostEntry, JudgeCall, ModelPrice, Run, Trial
from sherlock.core.aio import aclose_loop_clients
from tests.support import factories
from tests.support.judge_fixtures import JUDGE_MODEL
from tests.support.judging import (
    GOOD,
    RELEVANCE,
    VARIABLES,
    ask_blocking,
    ask_on_a_loop,
    fast_judge,
)
from tests.support.llm_server import (
    Fault,
    Reply,
    hang,
    malformed,
    rate_limited,
    refusal,
    server_error,
)


def calls_in_order():
    return list(JudgeCall.objects.order_by("id"))


@pytest.fixture(params=[ask_blocking, ask_on_a_loop], ids=["ask", "aask"])
def ask(request):
    """Each test below asks through `JudgeClient.ask` and again through `aask` on an event loop
    (the run engine's path): one flow, so the same answers, calls, waits and cache."""
    return request.param


# --- a good answer -------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_valid_answer_is_data_with_one_recorded_call(ask, judge, llm_server):
    llm_server.script([Reply(content=GOOD, usage=(120, 30))])

    answer = ask(judge, RELEVANCE, VARIABLES)

    assert answer.ok and answer.error is None
    assert answer.data == GOOD
    assert not answer.cached
    (call,) = calls_in_order()
    assert answer.calls == [call]
    assert call.status == JudgeCall.Status.OK
    assert (call.model, call.rubric_id, call.rubric_version) == (JUDGE_MODEL, "test.relevance", 3)
    assert (call.prompt_tokens, call.completion_tokens) == (120, 30)
    assert call.latency_ms > 0
    assert call.attempt == 1
    assert call.raw_answer == answer.raw
    assert call.response["choices"][0]["message"]["content"] == answer.raw
    assert len(call.prompt_hash) == len(call.cache_key) == 64
    # Stored as sent, but for the schema, kept by its hash (the rubric's own, id and version).
    sent = llm_server.requests[0]
    stored_format = call.request["response_format"]["json_schema"]
    assert {**call.request, "response_format": sent["response_format"]} == sent
    assert stored_format["schema"] == {
        "sha256": sha256(canonical_json(sent["response_format"]["json_schema"]["schema"]))
    }


BOUNDED = bound_schema(RELEVANCE.schema, {})


def test_the_request_is_a_strict_structured_output_at_temperature_zero_with_a_seed(ask, llm_server):
    ask(fast_judge(llm_server), RELEVANCE, VARIABLES)

    (request,) = llm_server.requests
    assert request["model"] == JUDGE_MODEL
    assert request["temperature"] == 0
    assert request["seed"] == settings.SHERLOCK_JUDGE_SEED
    assert request["response_format"] == {
        "type": "json_schema",
        # The rubric's schema with its bounds: the reason's maxLength.
        "json_schema": {"name": "test_relevance", "schema": BOUNDED, "strict": True},
    }
    assert request["messages"] == [
        {"role": "system", "content": RELEVANCE.system},
        {"role": "user", "content": RELEVANCE.template.format(**VARIABLES)},
    ]


def test_a_check_may_ask_another_model(ask, llm_server):
    answer = ask(fast_judge(llm_server), RELEVANCE, VARIABLES, model="other-judge")

    assert answer.ok
    assert llm_server.requests[0]["model"] == "other-judge"
    assert answer.calls[0].model == "other-judge"


# --- faults --------------------------------------------------------------------------------


@pytest.fixture
def waits(monkeypatch):
    """The waits the retry policy asks for between attempts, in seconds (what waited, not how
    long the machine took: a slow machine passes)."""
    asked = []
    run = RetryPolicy.run

    async def recording(self, attempt, failed, sleep):
        async def wait(seconds):
            asked.append(seconds)
            await sleep(seconds)

        return await run(self, attempt, failed, wait)

    monkeypatch.setattr(RetryPolicy, "run", recording)
    return asked


@pytest.mark.django_db
def test_429_waits_for_retry_after_then_succeeds(ask, judge, llm_server, waits):
    llm_server.script([rate_limited(retry_after=1), GOOD])

    answer = ask(judge, RELEVANCE, VARIABLES)

    assert waits == [1]  # Retry-After 1 s, not the 50 ms backoff cap
    assert answer.ok and answer.data == GOOD
    limited, good = calls_in_order()
    assert (limited.attempt, limited.status) == (1, JudgeCall.Status.ERROR)
    assert limited.error == "HTTP 429: Rate limit reached."
    assert limited.response["status_code"] == 429
    assert (limited.prompt_tokens, limited.completion_tokens) == (0, 0)
    assert limited.latency_ms > 0
    assert (good.attempt, good.status) == (2, JudgeCall.Status.OK)
    assert good.prompt_tokens > 0 and good.completion_tokens > 0


@pytest.mark.django_db
def test_429_until_retries_run_out_is_an_error_not_a_score(ask, judge, llm_server):
    llm_server.script([rate_limited(retry_after=0.05)] * 3)

    answer = ask(judge, RELEVANCE, VARIABLES)

    assert not answer.ok and answer.data is None
    assert answer.error_code == "rate_limited"
    assert answer.error == "HTTP 429: Rate limit reached. (after 3 attempts)"
    calls = calls_in_order()
    assert [call.attempt for call in calls] == [1, 2, 3]
    assert {call.status for call in calls} == {JudgeCall.Status.ERROR}
    assert len(llm_server.requests) == 3


def test_a_retry_after_over_the_limit_is_not_waited_for(ask, llm_server, waits):
    llm_server.script([rate_limited(retry_after=600)])

    answer = ask(fast_judge(llm_server, max_retry_after=5), RELEVANCE, VARIABLES)

    assert waits == []  # the 600 s were not waited out
    assert not answer.ok and answer.error_code == "rate_limited"
    assert "over the 5 s limit" in answer.error
    assert len(llm_server.requests) == 1


@pytest.mark.django_db
def test_500_is_retried_with_backoff_then_succeeds(ask, judge, llm_server):
    llm_server.script([server_error(), server_error(503), GOOD])

    answer = ask(judge, RELEVANCE, VARIABLES)

    assert answer.ok and answer.data == GOOD
    assert [(c.status, c.response.get("status_code")) for c in calls_in_order()] == [
        (JudgeCall.Status.ERROR, 500),
        (JudgeCall.Status.ERROR, 503),
        (JudgeCall.Status.OK, None),
    ]


@pytest.mark.django_db
def test_500_until_retries_run_out_is_an_error_not_a_score(ask, judge, llm_server):
    llm_server.script([server_error()] * 3)

    answer = ask(judge, RELEVANCE, VARIABLES)

    assert not answer.ok and answer.data is None
    assert answer.error_code == "server_error"
    assert answer.error.startswith("HTTP 500: The server had an error")
    calls = calls_in_order()
    assert len(calls) == 3
    assert all(c.status == JudgeCall.Status.ERROR and c.error for c in calls)
    assert all(c.latency_ms > 0 and c.prompt_tokens == 0 for c in calls)


def test_a_client_error_is_not_retried(ask, llm_server):
    llm_server.script([Fault(status=400, message="Invalid schema for response_format.")])

    answer = ask(fast_judge(llm_server), RELEVANCE, VARIABLES)

    assert not answer.ok and answer.error_code == "http_error"
    assert answer.error == "HTTP 400: Invalid schema for response_format."
    assert len(llm_server.requests) == 1


@pytest.mark.django_db
def test_a_hang_past_the_timeout_is_an_error_not_a_score(ask, llm_server):
    llm_server.script([hang(30)])
    judge = JudgeClient(base_url=llm_server.url, model=JUDGE_MODEL, timeout=1, max_retries=0)
    answer = ask(judge, RELEVANCE, VARIABLES)

    # Its own timeout ended it (the hang's end would close the connection: another error).
    assert not answer.ok and answer.data is None
    assert answer.error_code == "timeout"
    assert answer.error == "no answer within 1 s"
    (call,) = calls_in_order()
    assert call.status == JudgeCall.Status.ERROR
    assert call.error == "no answer within 1 s"
    assert call.latency_ms >= 950
    assert call.response is None


@pytest.mark.django_db
def test_a_timeout_is_retried(ask, judge, llm_server):
    llm_server.script([hang(10), GOOD])

    answer = ask(judge, RELEVANCE, VARIABLES)

    assert answer.ok and answer.data == GOOD
    assert [c.status for c in calls_in_order()] == [JudgeCall.Status.ERROR, JudgeCall.Status.OK]


def test_a_refused_connection_is_an_error(ask):
    with socket.socket() as probe:  # a port that was free a moment ago: nobody listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    closed = JudgeClient(
        base_url=f"http://127.0.0.1:{port}/v1",
        model=JUDGE_MODEL,
        timeout=1,
        max_retries=1,
        max_backoff=0.01,
        recorder=None,
        cache_lookup=None,
    )

    answer = ask(closed, RELEVANCE, VARIABLES)

    # Named by its cause, blocking or on the loop (whose transport calls it a timeout), and
    # asked again: a server restarting comes back.
    assert not answer.ok
    assert (answer.error_code, answer.error) == (
        "connection_refused",
        "connection refused (after 2 attempts)",
    )
    assert len(answer.calls) == 2


def test_a_refused_connection_never_waits_long_between_tries():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sdk = openai_client(f"http://127.0.0.1:{port}/v1", None)
    # A timeout's waits here would be 20 s and more; a refusal's stay at REFUSED_MAX_WAIT.
    policy = RetryPolicy(timeout=60, max_retries=3, max_backoff=30, base_backoff=20)
    waits = []

    async def attempt():
        return chat_completion(sdk, {"model": JUDGE_MODEL, "messages": []}, 60)

    async def sleep(seconds):
        waits.append(seconds)

    failure = asyncio.run(policy.run(attempt, lambda failure, ms: None, sleep))

    assert failure.code == "connection_refused"
    assert failure.error == "connection refused (after 4 attempts)"
    assert len(waits) == 3 and max(waits) <= REFUSED_MAX_WAIT == 1.0


def test_an_unknown_host_is_not_asked_again(ask):
    unknown = JudgeClient(
        base_url="http://judge.invalid/v1",
        model=JUDGE_MODEL,
        timeout=5,
        max_retries=3,
        recorder=None,
        cache_lookup=None,
    )
    answer = ask(unknown, RELEVANCE, VARIABLES)

    assert answer.error_code == "name_not_found" and len(answer.calls) == 1
    assert answer.error.startswith("host name not found")


# --- malformed answers and refusals --------------------------------------------------------


@pytest.mark.django_db
def test_a_malformed_answer_is_repaired_by_one_re_ask(ask, judge, llm_server):
    llm_server.script([malformed("The score is 1."), GOOD])

    answer = ask(judge, RELEVANCE, VARIABLES)

    assert answer.ok and answer.data == GOOD
    bad, good = calls_in_order()
    assert bad.status == JudgeCall.Status.ERROR
    assert bad.error.startswith("the answer is not JSON")
    assert bad.raw_answer == "The score is 1."
    assert bad.prompt_tokens > 0 and bad.completion_tokens > 0  # a bad answer still costs
    assert (good.status, good.attempt) == (JudgeCall.Status.OK, 2)
    assert good.cache_key == bad.cache_key
    assert good.prompt_hash != bad.prompt_hash  # the repair is a different prompt
    repair = llm_server.requests[1]["messages"]
    assert repair[:2] == llm_server.requests[0]["messages"]
    assert repair[2] == {"role": "assistant", "content": "The score is 1."}
    assert repair[3]["role"] == "user"
    assert "not JSON" in repair[3]["content"]


@pytest.mark.django_db
def test_twice_malformed_is_an_error_with_the_raw_answer_kept(ask, judge, llm_server):
    llm_server.script([malformed("no idea"), {"score": 2}])

    answer = ask(judge, RELEVANCE, VARIABLES)

    assert not answer.ok and answer.data is None
    assert answer.error_code == "malformed"
    assert answer.error.startswith("malformed answer after a repair retry: ")
    assert "does not match the schema" in answer.error
    assert answer.raw == '{"score":2}'
    first, second = calls_in_order()
    assert (first.raw_answer, second.raw_answer) == ("no idea", '{"score":2}')
    assert {first.status, second.status} == {JudgeCall.Status.ERROR}
    assert len(llm_server.requests) == 2  # one repair, no more


@pytest.mark.django_db
def test_a_refusal_is_an_error_not_a_score(ask, judge, llm_server):
    llm_server.script([refusal("I can't grade that."), refusal("Still no.")])

    answer = ask(judge, RELEVANCE, VARIABLES)

    assert not answer.ok and answer.data is None
    assert answer.error_code == "refused"
    assert answer.error == "malformed answer after a repair retry: the judge refused: Still no."
    assert answer.raw == "Still no."
    calls = calls_in_order()
    assert [c.raw_answer for c in calls] == ["I can't grade that.", "Still no."]
    assert all(c.status == JudgeCall.Status.ERROR and c.completion_tokens > 0 for c in calls)


def test_a_refusal_then_a_valid_answer_is_ok(ask, llm_server):
    llm_server.script([refusal(), GOOD])

    answer = ask(fast_judge(llm_server), RELEVANCE, VARIABLES)

    assert answer.ok and answer.data == GOOD
    assert answer.http_calls == 2


def test_an_answer_cut_off_twice_at_the_token_limit_is_an_error(ask, llm_server):
    # A cut-off answer has a code of its own, and its re-ask is a brevity retry
    # (tests/evaluations/test_judge_bounds.py shows what that re-ask sends).
    llm_server.script([Reply(content='{"reason": "It ans', finish_reason="length")] * 2)

    answer = ask(fast_judge(llm_server), RELEVANCE, VARIABLES)

    assert not answer.ok and answer.error_code == "cut_off"
    assert answer.error == (
        "malformed answer after a brevity retry: the answer was cut off at the token limit "
        "(256 tokens)"
    )


# --- the cache ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_repeated_ask_is_answered_from_the_cache_without_a_request(ask, judge, llm_server):
    first = ask(judge, RELEVANCE, VARIABLES)
    second = ask(judge, RELEVANCE, VARIABLES)

    assert len(llm_server.requests) == 1
    assert second.ok and second.cached
    assert second.data == first.data
    assert second.data is not first.data  # each caller gets its own copy
    paid, hit = calls_in_order()
    assert (hit.cached, hit.status, hit.cache_key) == (True, JudgeCall.Status.OK, paid.cache_key)
    assert (hit.prompt_tokens, hit.completion_tokens, hit.usd) == (0, 0, None)
    assert hit.response == {"cached_from": paid.pk}
    assert not hit.price_missing  # not incurred, rather than missing
    assert CostEntry.objects.get().judge_call == paid  # no cost line for the hit


@pytest.mark.django_db
def test_the_cache_outlives_the_process_through_stored_calls(ask, judge, llm_server):
    ask(judge, RELEVANCE, VARIABLES)
    restarted = JudgeClient(base_url=llm_server.url, model=JUDGE_MODEL, timeout=1)

    answer = ask(restarted, RELEVANCE, VARIABLES)

    assert answer.cached
    assert len(llm_server.requests) == 1


@pytest.mark.django_db
def test_a_failed_ask_is_not_cached(ask, judge, llm_server):
    llm_server.script([Fault(status=400)])
    assert not ask(judge, RELEVANCE, VARIABLES).ok

    answer = ask(judge, RELEVANCE, VARIABLES)

    assert answer.ok and not answer.cached
    assert len(llm_server.requests) == 2


def test_the_cache_key_covers_model_prompt_and_schema(ask, llm_server):
    judge = fast_judge(llm_server)
    reason_only = {**RELEVANCE.schema, "properties": {"reason": {"type": "string"}}}
    other_schema = dataclasses.replace(RELEVANCE, schema={**reason_only, "required": ["reason"]})

    ask(judge, RELEVANCE, VARIABLES)
    ask(judge, RELEVANCE, {**VARIABLES, "answer": "In Rome."})
    ask(judge, RELEVANCE, VARIABLES, model="other-judge")
    ask(judge, other_schema, VARIABLES)
    ask(judge, RELEVANCE, VARIABLES)

    assert len(llm_server.requests) == 4


def test_repetitions_of_the_agent_are_judged_independently(ask, llm_server):
    judge = fast_judge(llm_server)

    ask(judge.bind(repetition=0), RELEVANCE, VARIABLES)
    ask(judge.bind(repetition=1), RELEVANCE, VARIABLES)
    again = ask(judge.bind(repetition=1), RELEVANCE, VARIABLES)

    assert len(llm_server.requests) == 2  # re-scoring repetition 1 is a cache hit
    assert again.cached


def test_cache_false_always_asks(ask, llm_server):
    judge = fast_judge(llm_server)

    ask(judge, RELEVANCE, VARIABLES)
    answer = ask(judge, RELEVANCE, VARIABLES, cache=False)

    assert not answer.cached
    assert len(llm_server.requests) == 2


def test_identical_asks_on_two_threads_make_one_request(llm_server):
    llm_server.latency = 0.3  # long enough for both threads to ask while the first waits
    judge = fast_judge(llm_server)
    answers = []

    def ask():
        answers.append(judge.ask(RELEVANCE, VARIABLES))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(llm_server.requests) == 1
    assert sorted(a.cached for a in answers) == [False, True, True, True]
    assert all(a.ok and a.data == answers[0].data for a in answers)


def test_identical_asks_as_coroutines_on_one_loop_make_one_request(llm_server):
    llm_server.latency = 0.3
    judge = fast_judge(llm_server)

    async def ask_four():
        try:
            return await asyncio.gather(*(judge.aask(RELEVANCE, VARIABLES) for _ in range(4)))
        finally:
            await aclose_loop_clients()

    answers = asyncio.run(ask_four())

    assert len(llm_server.requests) == 1
    assert sorted(a.cached for a in answers) == [False, True, True, True]
    assert all(a.ok and a.data == answers[0].data for a in answers)


@pytest.mark.parametrize("first", ["thread", "coroutine"])
def test_a_coroutine_and_a_thread_asking_the_same_question_make_one_request(first, llm_server):
    # The cache's single flight between a blocking asker on a thread and a coroutine on a loop
    # (an admin preview while a shard runs): whichever asks first, the other waits for it.
    llm_server.latency = 0.3
    judge = fast_judge(llm_server)
    answers = {}

    def on_thread():
        answers["thread"] = judge.ask(RELEVANCE, VARIABLES)

    async def on_loop():
        try:
            answers["coroutine"] = await judge.aask(RELEVANCE, VARIABLES)
        finally:
            await aclose_loop_clients()

    second = "coroutine" if first == "thread" else "thread"
    starts = {
        "thread": threading.Thread(target=on_thread),
        "coroutine": threading.Thread(target=asyncio.run, args=(on_loop(),)),
    }
    starts[first].start()
    time.sleep(0.1)  # the first is waiting for its answer when the second asks
    starts[second].start()
    for thread in starts.values():
        thread.join()

    assert len(llm_server.requests) == 1
    assert not answers[first].cached
    assert answers[second].cached and answers[second].data == answers[first].data


# --- prices and the cost ledger ----------------------------------------------------------


@pytest.mark.django_db
def test_a_missing_price_leaves_usd_null_on_the_call_and_the_cost_entry(ask, judge, llm_server):
    ask(judge, RELEVANCE, VARIABLES)

    call = JudgeCall.objects.get()
    entry = CostEntry.objects.get()
    assert call.usd is None and call.price_missing
    assert entry.usd is None
    assert (entry.kind, entry.judge_call, entry.model) == ("scoring", call, JUDGE_MODEL)
    assert (entry.prompt_tokens, entry.completion_tokens) == (
        call.prompt_tokens,
        call.completion_tokens,
    )


@pytest.mark.django_db
def test_a_price_gives_the_usd_of_each_call(ask, judge, llm_server):
    ModelPrice.objects.create(
        model=JUDGE_MODEL,
        usd_per_million_input=Decimal("2.50"),
        usd_per_million_output=Decimal("10.00"),
    )
    llm_server.script([Reply(content=GOOD, usage=(1000, 200))])

    answer = ask(judge, RELEVANCE, VARIABLES)

    expected = Decimal("0.0045")  # 1000 x 2.50 / 1e6 + 200 x 10.00 / 1e6
    assert answer.calls[0].usd == expected
    assert JudgeCall.objects.get().usd == expected
    assert CostEntry.objects.get().usd == expected


@pytest.mark.django_db
def test_every_real_attempt_gets_a_cost_line(ask, judge, llm_server):
    llm_server.script([server_error(), malformed(), GOOD])

    ask(judge, RELEVANCE, VARIABLES)

    assert CostEntry.objects.count() == 3
    assert sorted(e.judge_call.attempt for e in CostEntry.objects.all()) == [1, 2, 3]


@pytest.mark.django_db
def test_calls_are_recorded_against_the_bound_run_trial_and_agent(ask, judge, llm_server):
    version = factories.agent_version()
    dataset_version = factories.dataset_version(cases=[("where", {"question": "?"}, {})])
    run = Run.objects.create(agent_version=version, dataset_version=dataset_version)
    case_version = dataset_version.case_versions.get()
    trial = Trial.objects.create(
        run=run, case=case_version.case, case_version=case_version, repetition=2
    )

    answer = ask(judge.bind(run=run, trial=trial), RELEVANCE, VARIABLES)

    call = JudgeCall.objects.get()
    assert (call.run, call.trial) == (run, trial)
    entry = CostEntry.objects.get()
    assert (entry.run, entry.trial, entry.agent) == (run, trial, version.agent)
    assert answer.call_ids == [call.pk]
    # A bare run id works too: the recorder finds the agent.
    ask(judge.bind(run=run.pk, repetition=5), RELEVANCE, VARIABLES)
    assert CostEntry.objects.latest("id").agent == version.agent


# --- binding, the default judge and the shared SDK client ----------------------------------


def test_bind_returns_a_view_that_shares_the_client_and_cache(ask, llm_server):
    recorder = MemoryRecorder()
    judge = fast_judge(llm_server, recorder=recorder)

    bound = judge.bind(run=11, trial=12, agent=13, repetition=1)
    ask(bound, RELEVANCE, VARIABLES)
    ask(bound.bind(trial=14), RELEVANCE, VARIABLES)

    assert len(llm_server.requests) == 1  # same repetition, same question: a cache hit
    first, hit = recorder.calls
    assert (first.run_id, first.trial_id) == (11, 12)
    assert (hit.run_id, hit.trial_id, hit.cached) == (11, 14, True)
    assert recorder.contexts[0].agent_id == 13
    assert judge.context.run_id is None  # the original is untouched


def test_without_a_base_url_there_is_no_default_judge(settings):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    reset_default_judges()

    assert get_default_judge() is None
    assert get_default_judge(run=1, trial=2) is None


@pytest.mark.django_db
def test_the_default_judge_comes_from_settings(ask, judge_settings, llm_server):
    judge = get_default_judge(run=None)

    answer = ask(judge, RELEVANCE, VARIABLES)

    assert answer.ok
    assert judge.model == JUDGE_MODEL
    assert llm_server.requests[0]["model"] == JUDGE_MODEL
    assert get_default_judge()._core is judge._core  # one per configuration and process


def test_one_sdk_client_per_base_url(llm_server):
    one = fast_judge(llm_server)
    two = fast_judge(llm_server, timeout=5)
    elsewhere = fast_judge(llm_server, base_url=llm_server.url.replace("127.0.0.1", "localhost"))

    assert one.sdk is two.sdk
    assert one.sdk is not elsewhere.sdk
    assert one.sdk.max_retries == 0  # our retries, not the SDK's


def test_asks_reuse_pooled_connections(llm_server):
    judge = fast_judge(llm_server, cache_size=0)

    for n in range(5):
        judge.ask(RELEVANCE, {**VARIABLES, "answer": str(n)})

    assert len(llm_server.requests) == 5
    assert llm_server.connections <= 1  # keep-alive: at most one new connection for five asks


def test_asks_on_a_loop_reuse_the_loops_pooled_connections(llm_server):
    judge = fast_judge(llm_server, cache_size=0)

    async def ask_five():
        try:
            for n in range(5):
                await judge.aask(RELEVANCE, {**VARIABLES, "answer": str(n)})
        finally:
            await aclose_loop_clients()

    asyncio.run(ask_five())

    assert len(llm_server.requests) == 5
    assert llm_server.connections <= 1  # the loop's one AsyncOpenAI keeps its connection
