"""Bounded answers on the wire: a completion cap on every call, maxItems on every
answer array derived from the question, a cut-off answer asked again fresh and brief, a server
that refuses maxItems, a failed question not asked twice in a trial, and a cache that knows
which server answered."""

import pytest

from evaluations.checks import rubrics
from evaluations.checks.rag import numbered_contexts
from evaluations.judge import JudgeClient
from evaluations.judge.schema import bound_schema, completion_budget, prepare, server_bounds
from evaluations.judge.sdk import cap_parameter
from evaluations.models import CheckResult, JudgeCall
from tests.support import factories
from tests.support.judge_fixtures import JUDGE_MODEL
from tests.support.judging import GOOD, RELEVANCE, VARIABLES, fast_judge
from tests.support.llm_server import Fault, LLMServer, Reply, malformed

ANSWER = "Paris is the capital of France. The Seine runs through it, and it has six bridges."
CLAIMS = {"question": "Tell me about Paris.", "answer": ANSWER}  # 16 words: 16 // 2 + 3 = 11
GOOD_CLAIMS = {
    "claims": [{"claim": "Paris is the capital.", "reason": "On topic.", "relevant": "yes"}],
    "reason": "It answers.",
    "noncommittal": False,
}


def arrays(schema, path=""):
    """(path, array schema) of every array in a schema."""
    if schema.get("type") == "array":
        yield path, schema
        yield from arrays(schema.get("items") or {}, f"{path}[]")
    for name, child in (schema.get("properties") or {}).items():
        yield from arrays(child, f"{path}.{name}")


def nodes(schema):
    """Every schema node, depth first."""
    yield schema
    for child in (schema.get("properties") or {}).values():
        yield from nodes(child)
    if isinstance(schema.get("items"), dict):
        yield from nodes(schema["items"])


def sent_schema(request):
    return request["response_format"]["json_schema"]["schema"]


# --- the completion cap --------------------------------------------------------------------


def test_every_call_sends_a_cap_sized_from_the_bounded_schema(llm_server):
    llm_server.script([GOOD_CLAIMS])

    assert fast_judge(llm_server).ask(rubrics.CLAIMS, CLAIMS).ok

    (request,) = llm_server.requests
    schema = sent_schema(request)
    assert request["max_tokens"] == completion_budget(schema)
    # 11 claims x (8 + 3 x 4 + 50 + 50 + 8) + the reason, the flag and the braces, + 64.
    assert request["max_tokens"] == 11 * 128 + 8 + 4 + 4 + 50 + 4 + 8 + 64
    assert "max_completion_tokens" not in request


def test_a_configured_cap_is_sent_as_is(judge_settings, llm_server):
    judge_settings.SHERLOCK_JUDGE_MAX_TOKENS = 700

    JudgeClient(recorder=None, cache_lookup=None).ask(rubrics.CLAIMS, CLAIMS)

    assert llm_server.requests[0]["max_tokens"] == 700


def test_the_cap_parameter_can_be_the_sdks_documented_one(llm_server):
    fast_judge(llm_server, cap_parameter="max_completion_tokens").ask(RELEVANCE, VARIABLES)

    (request,) = llm_server.requests
    assert request["max_completion_tokens"] == 256
    assert "max_tokens" not in request  # OpenAI refuses both at once


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("https://api.openai.com/v1", "max_completion_tokens"),
        ("https://myteam.openai.azure.com/openai/v1/", "max_completion_tokens"),
        ("http://127.0.0.1:8080/v1", "max_tokens"),  # llama.cpp
        ("http://gpu-box:8000/v1", "max_tokens"),  # vLLM
        ("http://localhost:11434/v1", "max_tokens"),  # Ollama
    ],
)
def test_auto_sends_the_cap_as_the_server_honours_it(url, parameter):
    assert cap_parameter(url, "auto") == parameter
    assert cap_parameter(url, "max_tokens") == "max_tokens"


# --- maxItems ------------------------------------------------------------------------------


@pytest.mark.parametrize("rubric", list(rubrics.RUBRICS.values()), ids=list(rubrics.RUBRICS))
def test_every_array_of_every_rubric_is_bounded_on_the_wire(rubric, llm_server):
    family, variables = next(
        (f, v) for f, (r, v) in rubrics.PROBES.items() if r.family == rubric.family
    )
    variables = {
        **variables,
        "answer": ANSWER,
        "claims": "1. a\n2. b",
        "contexts": numbered_contexts(["one", "two", "three"]),
        "reference": "Red, green and blue.",
        "policy": "",
        "expected": "",
    }

    fast_judge(llm_server).ask(rubric, variables)

    schema = sent_schema(llm_server.requests[0])
    found = list(arrays(schema))
    assert all("maxItems" in array for _, array in found), found
    free_text = [node for node in nodes(schema) if node.get("type") == "string"]
    free_text = [node for node in free_text if "enum" not in node]
    assert free_text and all(node["maxLength"] == 200 for node in free_text)
    assert llm_server.requests[0]["max_tokens"] >= 256


def test_bounds_come_from_the_question(llm_server):
    judge = fast_judge(llm_server)
    contexts = numbered_contexts(["Paris is in France.", "The Seine runs through Paris."])

    judge.ask(rubrics.CLAIMS, CLAIMS)
    judge.ask(rubrics.FAITHFULNESS, {"contexts": contexts, "claims": "1. a\n2. b\n3. c"})
    judge.ask(rubrics.CONTEXT_PRECISION, {"question": "q", "answer": "a", "contexts": contexts})

    claims, faithfulness, precision = (sent_schema(r) for r in llm_server.requests)
    assert claims["properties"]["claims"]["maxItems"] == 11  # from the answer's 16 words
    assert faithfulness["properties"]["verdicts"]["maxItems"] == 3  # one per claim
    assert precision["properties"]["verdicts"]["maxItems"] == 2  # one per context
    assert "maxItems" not in rubrics.CLAIMS.schema["properties"]["claims"]  # the rubric's own


def test_a_too_long_list_is_not_valid(llm_server):
    items = [{"claim": str(n), "reason": "r", "relevant": "yes"} for n in range(12)]
    llm_server.script([{**GOOD_CLAIMS, "claims": items}] * 2)

    answer = fast_judge(llm_server).ask(rubrics.CLAIMS, CLAIMS)

    assert not answer.ok and "is too long" in answer.error


def test_bounds_can_be_turned_off_for_a_server_that_refuses_them(llm_server):
    fast_judge(llm_server, schema_bounds=False).ask(rubrics.CLAIMS, CLAIMS)

    (request,) = llm_server.requests
    assert sent_schema(request) == rubrics.CLAIMS.schema
    assert request["max_tokens"] == prepare(rubrics.CLAIMS, {"claims": 11}).budget  # still sized


def test_a_400_naming_maxitems_is_asked_again_without_it_once_and_for_all(llm_server):
    refused = Fault(status=400, message="Invalid schema: 'maxItems' is not permitted.")
    llm_server.script([refused, GOOD_CLAIMS])
    judge = fast_judge(llm_server)

    answer = judge.ask(rubrics.CLAIMS, CLAIMS)
    judge.ask(rubrics.CLAIMS, {**CLAIMS, "answer": "Paris."})

    assert answer.ok and answer.http_calls == 2
    first, second, later = llm_server.requests
    assert list(arrays(sent_schema(first)))[0][1]["maxItems"] == 11
    lengths_only = bound_schema(rubrics.CLAIMS.schema, {}, frozenset({"maxLength"}))
    assert sent_schema(second) == sent_schema(later) == lengths_only
    assert judge.bounds == {"maxLength"}


def test_a_400_naming_maxlength_drops_only_maxlength(llm_server):
    refused = Fault(
        status=400, message="Invalid schema for response_format: maxLength is not permitted."
    )
    llm_server.script([refused, GOOD_CLAIMS])
    judge = fast_judge(llm_server)

    assert judge.ask(rubrics.CLAIMS, CLAIMS).ok

    first, second = llm_server.requests
    assert sent_schema(first)["properties"]["reason"]["maxLength"] == 200
    assert sent_schema(second) == bound_schema(
        rubrics.CLAIMS.schema, {"claims": 11}, frozenset({"maxItems"})
    )
    assert judge.bounds == {"maxItems"}


def test_free_text_strings_are_bounded_and_enums_are_left_alone(llm_server):
    fast_judge(llm_server).ask(rubrics.CLAIMS, CLAIMS)

    schema = sent_schema(llm_server.requests[0])
    item = schema["properties"]["claims"]["items"]["properties"]
    assert item["claim"]["maxLength"] == item["reason"]["maxLength"] == 200
    assert "maxLength" not in item["relevant"]  # an enum


def test_a_custom_score_is_an_enum_of_the_checks_own_scale(llm_server):
    variables = {**rubrics.PROBES["custom"][1], "low": 1, "high": 5}

    fast_judge(llm_server).ask(rubrics.CUSTOM, variables)

    score = sent_schema(llm_server.requests[0])["properties"]["score"]
    assert score == {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    assert rubrics.CUSTOM.schema["properties"]["score"] == {"type": "integer"}  # the rubric's


def test_a_verdict_can_only_name_a_claim_or_context_that_exists(llm_server):
    judge = fast_judge(llm_server)
    contexts = numbered_contexts(["Paris is in France.", "The Seine runs through Paris."])

    judge.ask(rubrics.FAITHFULNESS, {"contexts": contexts, "claims": "1. a\n2. b\n3. c"})
    judge.ask(rubrics.CONTEXT_PRECISION, {"question": "q", "answer": "a", "contexts": contexts})

    faithfulness, precision = (sent_schema(r) for r in llm_server.requests)
    claim = faithfulness["properties"]["verdicts"]["items"]["properties"]["claim"]
    context = precision["properties"]["verdicts"]["items"]["properties"]["context"]
    assert claim == {"type": "integer", "enum": [1, 2, 3]}
    assert context == {"type": "integer", "enum": [1, 2]}


@pytest.mark.parametrize(
    ("url", "keywords"),
    [
        ("https://api.openai.com/v1", {"maxItems"}),  # strict mode refuses maxLength
        ("https://myteam.openai.azure.com/openai/v1/", {"maxItems"}),
        ("http://127.0.0.1:8080/v1", {"maxItems", "maxLength"}),
    ],
)
def test_each_server_is_sent_the_bounds_it_takes(url, keywords):
    assert server_bounds(url) == keywords
    assert server_bounds(url, enabled=False) == set()


def test_another_400_is_not_asked_again(llm_server):
    llm_server.script([Fault(status=400, message="Unknown model.")])

    answer = fast_judge(llm_server).ask(rubrics.CLAIMS, CLAIMS)

    assert not answer.ok and len(llm_server.requests) == 1


# --- the cut-off answer --------------------------------------------------------------------


def test_a_cut_off_answer_is_asked_again_fresh_and_brief(llm_server):
    cut = '{"claims": [{"claim": "Paris", "reason": "Paris is Paris is Paris is'
    llm_server.script([Reply(content=cut, finish_reason="length"), GOOD_CLAIMS])

    answer = fast_judge(llm_server).ask(rubrics.CLAIMS, CLAIMS)

    assert answer.ok and answer.data == GOOD_CLAIMS
    first, again = llm_server.requests
    # The same request, with the same cap and schema, but a brevity note and no cut-off text.
    assert {k: v for k, v in again.items() if k != "messages"} == {
        k: v for k, v in first.items() if k != "messages"
    }
    assert len(again["messages"]) == len(first["messages"]) == 2
    assert [m["role"] for m in again["messages"]] == ["system", "user"]
    assert all(cut not in m["content"] for m in again["messages"])
    question = first["messages"][1]["content"]
    assert again["messages"][1]["content"].startswith(question)
    note = again["messages"][1]["content"][len(question) :]
    assert "Be brief" in note and "at most 11 in claims" in note
    bad = answer.calls[0]
    assert bad.error == f"the answer was cut off at the token limit ({first['max_tokens']} tokens)"


def test_an_empty_answer_at_the_limit_is_cut_off_too(llm_server):
    # A prompt that fills the server's context leaves no room for any answer.
    llm_server.script([Reply(content="", finish_reason="length"), GOOD])

    answer = fast_judge(llm_server).ask(RELEVANCE, VARIABLES)

    assert answer.ok
    assert answer.calls[0].error.startswith("the answer was cut off")
    assert len(llm_server.requests[1]["messages"]) == 2


def test_another_malformed_answer_keeps_the_repair_that_shows_it(llm_server):
    llm_server.script([malformed("not json"), GOOD_CLAIMS])

    fast_judge(llm_server).ask(rubrics.CLAIMS, CLAIMS)

    repair = llm_server.requests[1]["messages"]
    assert repair[2] == {"role": "assistant", "content": "not json"}


# --- a failed question is not asked twice in a trial ---------------------------------------


def test_a_failure_is_reused_within_a_trial_and_asked_again_in_the_next(llm_server):
    llm_server.script([malformed(), malformed()])
    judge = fast_judge(llm_server)
    trial = judge.bind(trial=1)

    first = trial.ask(rubrics.CLAIMS, CLAIMS)
    again = trial.ask(rubrics.CLAIMS, CLAIMS, cache=False)

    assert not first.ok and not again.ok
    assert (again.error, again.error_code, again.raw) == (first.error, first.error_code, first.raw)
    assert again.reused and again.calls == []
    assert len(llm_server.requests) == 2  # the question and its repair, once
    assert judge.bind(trial=2).ask(rubrics.CLAIMS, CLAIMS).ok  # another trial asks again
    assert len(llm_server.requests) == 3


@pytest.mark.django_db
def test_answer_relevance_reuses_the_claims_failure_of_faithfulness(
    builder, judge_settings, llm_server, django_capture_on_commit_callbacks
):
    checks = [
        {"label": "Faithful", "kind": "faithfulness", "params": {"contexts": "reference"}},
        {"label": "Relevant", "kind": "answer_relevance"},
    ]
    version = factories.agent_version(callable_path="tests.support.agents_under_test.echo")
    dataset_version = factories.dataset_version(
        cases=[("paris", "Where is Paris?", {"contexts": ["Paris is in France."]})],
        checks=checks,
    )
    llm_server.responder = lambda request: malformed("I think it is fine.")

    run = factories.start_run(builder, version, dataset_version, django_capture_on_commit_callbacks)

    faithful, relevant = (
        CheckResult.objects.get(trial__run=run, check_config__label=label)
        for label in ("Faithful", "Relevant")
    )
    assert faithful.status == relevant.status == "error"
    assert relevant.reason == faithful.reason
    assert faithful.reason.startswith("malformed answer after a repair retry")
    assert relevant.judge_call_ids == []
    assert len(llm_server.requests) == 2  # rag.claims and its repair; nothing re-asked
    assert JudgeCall.objects.filter(run=run).count() == 2


# --- the cache knows its server ------------------------------------------------------------


@pytest.mark.django_db
def test_another_server_does_not_reuse_the_answers_of_the_first(llm_server):
    with LLMServer(model=JUDGE_MODEL) as other:
        first = JudgeClient(base_url=llm_server.url, model=JUDGE_MODEL, timeout=1)
        first.ask(RELEVANCE, VARIABLES)
        assert first.ask(RELEVANCE, VARIABLES).cached  # same server: from the cache

        elsewhere = JudgeClient(base_url=other.url, model=JUDGE_MODEL, timeout=1)
        answer = elsewhere.ask(RELEVANCE, VARIABLES)

        assert not answer.cached
        assert len(other.requests) == 1  # the stored JudgeCall of the first server not used
    assert len(llm_server.requests) == 1
    keys = set(JudgeCall.objects.filter(cached=False).values_list("cache_key", flat=True))
    assert len(keys) == 2


def test_the_cache_key_names_the_server_and_the_model():
    from evaluations.judge.cache import cache_key

    def key(**changes):
        options = {
            "base_url": "http://127.0.0.1:8080/v1",
            "model": "gemma",
            "messages_json": "[]",
            "schema_hash": "0" * 64,
            "temperature": 0.0,
            "seed": 7,
            "repetition": 1,
        }
        return cache_key(**{**options, **changes})

    assert key() != key(base_url="https://api.openai.com/v1")
    assert key() != key(model="gemma-2")
    assert key() == key(base_url="http://127.0.0.1:8080/v1/")


def test_identical_asks_of_one_trial_on_two_threads_share_the_failure(llm_server):
    import threading

    llm_server.latency = 0.3  # both threads ask while the first waits for its answer
    llm_server.responder = lambda request: malformed()
    trial = fast_judge(llm_server).bind(trial=7)
    answers = []
    threads = [
        threading.Thread(target=lambda: answers.append(trial.ask(rubrics.CLAIMS, CLAIMS)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(llm_server.requests) == 2  # one question and its repair, for both
    assert sorted(a.reused for a in answers) == [False, True]
    assert answers[0].error == answers[1].error


def test_the_same_server_with_a_trailing_slash_is_the_same_judge(llm_server):
    one = fast_judge(llm_server)
    one.ask(RELEVANCE, VARIABLES)

    key = one.ask(RELEVANCE, VARIABLES).cache_key
    other = fast_judge(llm_server, base_url=llm_server.url + "/")

    assert other.ask(RELEVANCE, VARIABLES, cache=False).cache_key == key


@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("Paris.", 3),  # one word may state a whole claim, with the question's words
        ("Red, green and blue.", 5),  # a list: three facts in four words
        ("apples pears plums figs dates", 5),
        (" ".join(["word"] * 200), rubrics.MAX_ITEMS),
    ],
)
def test_a_text_bound_is_never_below_what_the_text_can_hold(text, items):
    assert rubrics.items_from_text(text) == items
