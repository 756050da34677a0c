"""The four adapters against real loopback servers: each config is validated with the field at
fault named, each call returns a transcript in the documented format, and each failure of the
agent is an `AgentCallError` (the trial's error), never a crash of the worker."""

import json
import threading

import pytest

from agents.adapters import AgentCallError, call_agent, openai_chat, prepare, validate_config
from agents.adapters.replay import read_jsonl
from agents.models import AgentVersion, Tool
from tests.support import factories
from tests.support.adapters import call_on_loop
from tests.support.llm_server import Fault, Reply, server_error, tool_call
from tests.support.loopback_agent import LoopbackAgent

CASE = {
    "id": "refund-1",
    "input": "Refund order 1182.",
    "expected": {"output": "Refunded."},
    "contexts": ["the answer key"],
    "expected_tools": [],
    "tags": [],
}


def version(adapter, config, tools=(), denied=()):
    validate_config(adapter, config)
    obj = AgentVersion.objects.create(
        agent=factories.agent(), number=1, adapter=adapter, config=config
    )
    obj.tools.set(tools)
    obj.denied_tools.set(denied)
    return obj


@pytest.fixture(params=["blocking", "on the loop"])
def call(request):
    """The adapters answer alike whether called (`call`) or awaited on the engine's loop."""
    return call_agent if request.param == "blocking" else call_on_loop


# --- config validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "adapter, config, field",
    [
        ("python", {}, "config.callable: is required"),
        ("python", {"callable": "tests.nowhere.agent"}, "config.callable: cannot import"),
        (
            "python",
            {"callable": "tests.support.agents_under_test.echo", "kwarg": 1},
            "config.kwarg",
        ),
        ("http", {"url": "ftp://agent"}, "config.url"),
        ("http", {"url": "http://agent", "timeout": 0}, "config.timeout"),
        ("http", {"url": "http://agent", "headers": {"X-Team": 7}}, "config.headers.X-Team"),
        (
            "http",
            {"url": "http://agent", "headers": {"Authorization": "Bearer sk-live-123"}},
            "config.headers.Authorization: a credential must be named by environment variable",
        ),
        (
            "http",
            {"url": "http://agent", "headers": {"Authorization": {"env": "not a name"}}},
            "config.headers.Authorization.env",
        ),
        ("openai_chat", {"base_url": "http://llm/v1"}, "config.model: is required"),
        ("openai_chat", {"base_url": "http://x", "model": "m", "max_turns": 0}, "config.max_turns"),
        (
            "openai_chat",
            {"base_url": "http://x", "model": "m", "max_tokens": 0},
            "config.max_tokens",
        ),
        (
            "openai_chat",
            {"base_url": "http://x", "model": "m", "tool_choice": "always"},
            "config.tool_choice",
        ),
        (
            "openai_chat",
            {"base_url": "http://llm/v1", "model": "m", "api_key": "sk-live-123"},
            "config.api_key",
        ),
        (
            "openai_chat",
            {
                "base_url": "https://llm.example.com/v1",
                "model": "m",
                "tools": {"kb.search": {"callable": "tests.nowhere.tool"}},
            },
            "config.tools.kb.search.callable: cannot import",
        ),
        ("replay", {"transcripts": {}}, "config.transcripts"),
        ("replay", {"transcripts": {"c1": "just text"}}, "config.transcripts.c1"),
        ("carrier_pigeon", {}, "adapter: unknown adapter"),
    ],
)
def test_a_bad_config_is_refused_naming_the_field(adapter, config, field):
    with pytest.raises(ValueError) as excinfo:
        validate_config(adapter, config)
    assert str(excinfo.value).startswith(field), excinfo.value


# --- python -----------------------------------------------------------------------------------


def test_python_adapter_calls_the_callable_with_the_case_and_measures_latency(call, db):
    agent = version("python", {"callable": "tests.support.agents_under_test.echo"})
    transcript = call(agent, CASE)
    assert transcript["output"] == "You said: Refund order 1182."
    assert transcript["latency_ms"] >= 0


def test_python_adapter_turns_the_agents_exception_into_an_agent_error(call, db):
    agent = version("python", {"callable": "tests.support.agents_under_test.scripted"})
    with pytest.raises(AgentCallError, match="RuntimeError: boom"):
        call(agent, {**CASE, "input": {"raise": "boom"}})


# --- http -------------------------------------------------------------------------------------


def test_http_adapter_posts_the_case_and_reads_the_transcript_back(call, db, monkeypatch, settings):
    settings.SHERLOCK_AGENT_ENV = ["SUPPORT_BOT_TOKEN"]
    monkeypatch.setenv("SUPPORT_BOT_TOKEN", "s3cret")
    answer = {"output": "Refunded.", "tool_calls": [{"name": "refunds.create"}], "cost_usd": 0.01}
    with LoopbackAgent(lambda request: (200, answer)) as service:
        config = {
            "url": f"{service.url}/agent",
            "headers": {
                "Authorization": {"env": "SUPPORT_BOT_TOKEN", "prefix": "Bearer "},
                "X-Team": "support",
            },
        }
        agent = version("http", config)
        transcript = call(agent, CASE, repetition=2)
    assert transcript["output"] == "Refunded." and transcript["cost_usd"] == 0.01
    assert transcript["latency_ms"] > 0
    [request] = service.requests
    # The case's id and input, never its answer key.
    assert request["body"] == {"id": "refund-1", "input": "Refund order 1182.", "repetition": 2}
    assert request["headers"]["authorization"] == "Bearer s3cret"
    assert request["headers"]["x-team"] == "support"
    # The secret lives in the environment only.
    assert "s3cret" not in json.dumps(AgentVersion.objects.get(pk=agent.pk).config)


def test_http_adapter_needs_the_secret_in_the_environment_at_call_time(db, monkeypatch, settings):
    settings.SHERLOCK_AGENT_ENV = ["SUPPORT_BOT_TOKEN"]
    monkeypatch.delenv("SUPPORT_BOT_TOKEN", raising=False)
    with LoopbackAgent() as service:
        agent = version(
            "http", {"url": service.url, "headers": {"Authorization": {"env": "SUPPORT_BOT_TOKEN"}}}
        )
        with pytest.raises(AgentCallError, match="SUPPORT_BOT_TOKEN is not set"):
            call_agent(agent, CASE)
        assert service.requests == []


def test_http_adapter_gives_up_after_its_timeout(call, db):
    release, answered = threading.Event(), []

    def slow(request):
        release.wait(30)  # until the test lets it answer
        answered.append(True)
        return 200, {"output": "late"}

    with LoopbackAgent(slow) as service:
        agent = version("http", {"url": service.url, "timeout": 0.2})
        with pytest.raises(AgentCallError, match="no answer within 0.2 s"):
            call(agent, CASE)
        assert answered == []  # it gave up while the agent was still working
        release.set()


@pytest.mark.parametrize(
    "status, body, message",
    [(503, {"error": "overloaded"}, "HTTP 503"), (200, [1, 2], "expected a transcript object")],
)
def test_http_adapter_reports_a_bad_answer_as_an_agent_error(call, db, status, body, message):
    with LoopbackAgent(lambda request: (status, body)) as service:
        agent = version("http", {"url": service.url})
        with pytest.raises(AgentCallError, match=message):
            call(agent, CASE)


# --- openai_chat ------------------------------------------------------------------------------

executed = []


def kb_search(arguments):
    executed.append(("kb.search", arguments))
    return {"hits": ["Refunds take 3 days."]}


def delete_account(arguments):
    executed.append(("accounts.delete", arguments))
    return "deleted"


@pytest.fixture
def tools(db):
    executed.clear()
    search = Tool.objects.create(
        name="kb.search",
        description="Search the knowledge base.",
        arguments_schema={"type": "object", "properties": {"query": {"type": "string"}}},
    )
    delete = Tool.objects.create(name="accounts.delete", high_impact=True, effectful=True)
    return search, delete


def chat_config(llm_server, **extra):
    here = "tests.agents.test_adapters"
    return {
        "base_url": llm_server.url,
        "model": "agent-model",
        "system_prompt": "You are the support bot.",
        "max_retries": 0,
        "tools": {
            "kb.search": {"callable": f"{here}.kb_search"},
            "accounts.delete": {"callable": f"{here}.delete_account"},
        },
        **extra,
    }


def test_openai_chat_runs_the_tool_loop_and_records_each_call(
    call, llm_server, tools, monkeypatch, settings
):
    settings.SHERLOCK_AGENT_ENV = ["AGENT_API_KEY"]
    monkeypatch.setenv("AGENT_API_KEY", "sk-agent")
    llm_server.script(
        [
            tool_call("kb_search", {"query": "refund"}, usage=(50, 10)),
            Reply(content="Refunds take 3 days.", usage=(80, 12)),
        ]
    )
    agent = version(
        "openai_chat",
        chat_config(llm_server, api_key={"env": "AGENT_API_KEY"}),
        tools=[tools[0]],
    )
    transcript = call(agent, CASE)
    assert transcript["output"] == "Refunds take 3 days."
    assert transcript["tool_calls"] == [
        {
            "id": transcript["tool_calls"][0]["id"],
            "name": "kb.search",
            "arguments": {"query": "refund"},
            "result": {"hits": ["Refunds take 3 days."]},
            "denied": False,
        }
    ]
    assert transcript["usage"] == {"prompt_tokens": 130, "completion_tokens": 22}
    assert transcript["model"] == "agent-model" and transcript["turns"] == 2
    assert executed == [("kb.search", {"query": "refund"})]
    first, second = llm_server.requests
    assert first["model"] == "agent-model"
    assert first["messages"][0] == {"role": "system", "content": "You are the support bot."}
    assert first["messages"][1] == {"role": "user", "content": "Refund order 1182."}
    assert [t["function"]["name"] for t in first["tools"]] == ["kb_search"]
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool"
    assert json.loads(tool_message["content"]) == {"hits": ["Refunds take 3 days."]}
    assert llm_server.log[0][2]["authorization"] == "Bearer sk-agent"


def test_openai_chat_refuses_a_denied_tool_and_tells_the_model(call, llm_server, tools):
    search, delete = tools
    llm_server.script(
        [tool_call("accounts_delete", {"account": 7}), Reply(content="I cannot delete it.")]
    )
    agent = version("openai_chat", chat_config(llm_server), tools=[search], denied=[delete])
    transcript = call(agent, CASE)
    [call] = transcript["tool_calls"]
    assert call["name"] == "accounts.delete" and call["denied"] is True
    assert call["arguments"] == {"account": 7}
    assert "denies 'accounts.delete'" in call["result"]
    assert executed == []  # never executed
    # The denied tool was offered, and the model was told it was refused.
    offered = [t["function"]["name"] for t in llm_server.requests[0]["tools"]]
    assert offered == ["accounts_delete", "kb_search"]
    assert "Refused" in llm_server.requests[1]["messages"][-1]["content"]
    assert transcript["output"] == "I cannot delete it."


def test_openai_chat_executes_a_tool_over_http(call, llm_server, db):
    tool = Tool.objects.create(name="orders.lookup")
    with LoopbackAgent(lambda request: (200, {"status": "paid"})) as service:
        llm_server.script([tool_call("orders_lookup", {"order": "A-1"}), Reply(content="Paid.")])
        config = chat_config(llm_server, tools={"orders.lookup": {"url": f"{service.url}/orders"}})
        transcript = call(version("openai_chat", config, tools=[tool]), CASE)
    assert service.requests[0]["body"] == {"order": "A-1"}
    assert transcript["tool_calls"][0]["result"] == {"status": "paid"}


def test_openai_chat_stops_at_max_turns(call, llm_server, tools):
    llm_server.script([tool_call("kb_search", {"query": "x"})] * 3)
    agent = version("openai_chat", chat_config(llm_server, max_turns=2), tools=[tools[0]])
    transcript = call(agent, CASE)
    assert transcript["turns"] == 2 and len(transcript["tool_calls"]) == 2
    assert transcript["stopped"] == "max_turns (2) reached"


def test_openai_chat_endpoint_failure_is_an_agent_error(call, llm_server, db):
    llm_server.script([server_error(500)])
    agent = version("openai_chat", chat_config(llm_server, tools={}))
    with pytest.raises(AgentCallError, match="agent-model"):
        call(agent, CASE)


def test_openai_chat_records_each_finish_reason_and_no_warning_for_a_plain_answer(
    llm_server, tools
):
    llm_server.script([tool_call("kb_search", {"query": "refund"}), Reply(content="3 days.")])
    agent = version("openai_chat", chat_config(llm_server), tools=[tools[0]])
    transcript = call_agent(agent, CASE)
    assert transcript["finish_reasons"] == ["tool_calls", "stop"]
    assert transcript["finish_reason"] == "stop"
    assert transcript["warnings"] == []


def test_openai_chat_warns_when_the_answer_was_cut_off(llm_server, tools):
    llm_server.script([Reply(content="Refunds take three busi", finish_reason="length")])
    config = chat_config(llm_server, max_tokens=5, tool_choice="auto")
    transcript = call_agent(version("openai_chat", config, tools=[tools[0]]), CASE)
    assert transcript["finish_reason"] == "length"
    assert transcript["warnings"] == [
        "answer 1 was cut off at the token limit (finish_reason length, max_tokens 5)"
    ]
    [request] = llm_server.requests
    assert request["max_tokens"] == 5 and request["tool_choice"] == "auto"


def test_openai_chat_warns_when_the_server_writes_a_tool_call_as_text(llm_server, tools):
    # What a server whose chat template lacks tools sends: the call as text, no tool_calls.
    text = '```json\n{"name": "kb_search", "arguments": {"query": "refund"}}\n```'
    llm_server.script([Reply(content=text)])
    transcript = call_agent(version("openai_chat", chat_config(llm_server), tools=[tools[0]]), CASE)
    assert transcript["tool_calls"] == []
    [warning] = transcript["warnings"]
    assert "tools were offered but the server returned no tool calls" in warning
    assert "kb.search" in warning


def test_openai_chat_does_not_warn_when_the_model_just_answers_without_a_tool(llm_server, tools):
    llm_server.script([Reply(content="Use the kb_search page; refunds take 3 days.")])
    transcript = call_agent(version("openai_chat", chat_config(llm_server), tools=[tools[0]]), CASE)
    assert transcript["warnings"] == []


def test_openai_chat_warns_when_a_required_tool_call_does_not_come(llm_server, tools):
    llm_server.script([Reply(content="Refunds take 3 days.")])
    config = chat_config(llm_server, tool_choice="required")
    transcript = call_agent(version("openai_chat", config, tools=[tools[0]]), CASE)
    assert llm_server.requests[0]["tool_choice"] == "required"
    assert (
        "tool_choice is required but the server answered without a tool call"
        in (transcript["warnings"][0])
    )


def test_openai_chat_warns_on_a_tool_calls_finish_without_calls(llm_server, tools):
    llm_server.script([Reply(content="", finish_reason="tool_calls")])
    transcript = call_agent(version("openai_chat", chat_config(llm_server), tools=[tools[0]]), CASE)
    assert "finish_reason tool_calls but sent no tool calls" in transcript["warnings"][0]


@pytest.fixture(autouse=True)
def fresh_template_caps():
    # What a server said of its chat template is kept per process and base URL; a test's
    # loopback port may be an earlier test's.
    openai_chat._template_caps.clear()


LLAMA_PROPS_NO_TOOLS = {
    "chat_template_caps": {"supports_tool_calls": False, "supports_tools": False},
    "model_alias": "agent-model",
}


def test_openai_chat_warns_when_llama_cpp_reports_its_template_cannot_call_tools(llm_server, tools):
    # What llama.cpp does with a chat template without tools: drops them and answers as if
    # none were offered; only its /props says so.
    llm_server.llama_props = LLAMA_PROPS_NO_TOOLS
    llm_server.script([Reply(content="Shipping takes 5 days.")])
    transcript = call_agent(version("openai_chat", chat_config(llm_server), tools=[tools[0]]), CASE)
    [warning] = transcript["warnings"]
    assert "its chat template cannot call tools" in warning
    assert ("GET", "/props") in [(method, path) for method, path, _ in llm_server.log]


def test_openai_chat_asks_nothing_more_of_a_server_that_is_not_llama_cpp(llm_server, tools):
    llm_server.script([Reply(content="Shipping takes 5 days.")])
    transcript = call_agent(version("openai_chat", chat_config(llm_server), tools=[tools[0]]), CASE)
    assert transcript["warnings"] == []
    assert [path for _, path, _ in llm_server.log] == ["/v1/chat/completions"]


def test_openai_chat_does_not_warn_about_tools_it_told_the_model_not_to_use(llm_server, tools):
    llm_server.llama_props = LLAMA_PROPS_NO_TOOLS
    llm_server.script([Reply(content='{"name": "kb_search"}')])
    config = chat_config(llm_server, tool_choice="none")
    transcript = call_agent(version("openai_chat", config, tools=[tools[0]]), CASE)
    assert transcript["warnings"] == []


def test_openai_chat_does_not_warn_when_llama_cpp_can_call_tools(llm_server, tools):
    llm_server.llama_props = {"chat_template_caps": {"supports_tool_calls": True}}
    llm_server.script([Reply(content="Shipping takes 5 days.")])
    transcript = call_agent(version("openai_chat", chat_config(llm_server), tools=[tools[0]]), CASE)
    assert transcript["warnings"] == []


def test_openai_chat_names_a_server_that_refuses_tools(llm_server, tools):
    # llama.cpp started without --jinja answers a request with tools this way.
    llm_server.script([Fault(status=500, message="tools param requires --jinja flag")])
    agent = version("openai_chat", chat_config(llm_server), tools=[tools[0]])
    with pytest.raises(AgentCallError, match="cannot use the tools offered.*--jinja"):
        call_agent(agent, CASE)


def test_openai_chat_sends_a_named_tool_choice_by_its_wire_name(llm_server, tools):
    llm_server.script([tool_call("kb_search", {"query": "x"}), Reply(content="Done.")])
    config = chat_config(llm_server, tool_choice={"name": "kb.search"})
    call_agent(version("openai_chat", config, tools=[tools[0]]), CASE)
    assert llm_server.requests[0]["tool_choice"] == {
        "type": "function",
        "function": {"name": "kb_search"},
    }


def test_openai_chat_refuses_a_tool_choice_the_version_does_not_offer(llm_server, tools):
    config = chat_config(llm_server, tool_choice={"name": "orders.lookup"})
    with pytest.raises(AgentCallError, match="config.tool_choice.name"):
        prepare(version("openai_chat", config, tools=[tools[0]]))


# --- replay -----------------------------------------------------------------------------------

JSONL = "\n".join(
    json.dumps(row)
    for row in [
        {"case_id": "refund-1", "transcript": {"output": "first", "latency_ms": 900}},
        {"case_id": "refund-1", "transcript": {"output": "second", "latency_ms": 700}},
        {"case_id": "greet", "repetition": 1, "transcript": {"output": "hi"}},
    ]
)


def test_replay_answers_each_repetition_with_its_own_recording(db):
    agent = prepare(version("replay", read_jsonl(JSONL.splitlines())))
    assert agent.call(CASE, repetition=1) == {"output": "first", "latency_ms": 900}
    assert agent.call(CASE, repetition=2)["output"] == "second"
    assert "latency_ms" not in agent.call({"id": "greet"}, repetition=1)  # nothing measured
    with pytest.raises(AgentCallError, match="none for repetition 3"):
        agent.call(CASE, repetition=3)  # never a reuse of another repetition
    with pytest.raises(AgentCallError, match="no transcript recorded for case 'other'"):
        agent.call({"id": "other"}, repetition=1)


@pytest.mark.parametrize(
    "lines, message",
    [
        (["{not json"], "line 1: not JSON"),
        (['{"transcript": {}}'], "line 1: case_id is required"),
        (['{"case_id": "a", "transcript": "x"}'], "line 1: transcript is required"),
        (['{"case_id": "a", "repetition": 2, "transcript": {}}'], "repetitions must be 1..n"),
        ([], "no transcripts"),
    ],
)
def test_read_jsonl_names_the_line_at_fault(lines, message):
    with pytest.raises(ValueError, match=message):
        read_jsonl(lines)


def test_import_transcripts_creates_a_replay_draft(builder, tmp_path):
    from django.core.management import call_command

    from governance.models import AuditEntry

    agent = factories.agent("elsewhere-bot")
    path = tmp_path / "transcripts.jsonl"
    path.write_text(JSONL)
    call_command("import_transcripts", agent.slug, str(path), user=builder.username)
    imported = agent.versions.get()
    assert imported.adapter == "replay" and imported.state == "draft"
    assert imported.config["transcripts"]["refund-1"][1]["output"] == "second"
    assert AuditEntry.objects.filter(action="agents.version.create").exists()


def test_a_callable_outside_the_allowlist_is_refused_before_it_is_imported(settings):
    """Builders write agent configs, and the code runs in the workers: only what the operator
    lists (SHERLOCK_AGENT_CALLABLES) may be named."""
    from agents.adapters import validate_config

    settings.SHERLOCK_AGENT_CALLABLES = ["agents.demo."]
    with pytest.raises(ValueError, match="config.callable: 'subprocess.run' is not allowed"):
        validate_config("python", {"callable": "subprocess.run"})
    with pytest.raises(ValueError, match="config.tools.shell.callable"):
        validate_config(
            "openai_chat",
            {
                "model": "m",
                "base_url": "http://127.0.0.1:1/v1",
                "tools": {"shell": {"callable": "subprocess.run"}},
            },
        )
    assert validate_config("python", {"callable": "agents.demo.support_bot"})
