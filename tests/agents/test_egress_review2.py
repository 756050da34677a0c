"""A second review ("no secret leaves by configuration"), from the outside: each
test states what must hold and fails on today's main.

1. A host name is checked under one IDNA reading and connected to under another: the check
   resolves `faß.attacker.test` with Python's codec (IDNA 2003: `fass.attacker.test`), httpx
   connects to `xn--fa-hia.attacker.test` (IDNA 2008). An attacker's zone that answers a public
   address for the first and 127.0.0.1 for the second (stable DNS, no rebinding) reaches
   loopback through `*` (agents, webhooks). The zone is played by a stand-in resolver below.
2. A secret header's `prefix` is free text: `" "` makes the value an illegal header, and h11's
   error, which quotes the whole value, is stored as the trial's error (read by the Builder)
   and, through an `openai_chat` tool executor, posted to the model's endpoint. A value that
   ends in a newline does the same with no prefix, in the trial's error and in an HTTP
   verifier's evidence (http.client quotes it too).
3. A verifier that names Sherlock's own secret is refused but not audited (the agent version's
   and the webhook's refusals are).
4. `openai_chat`'s SDK client reads OPENAI_CUSTOM_HEADERS, OPENAI_ORG_ID and OPENAI_PROJECT_ID
   from the workers' environment and sends them to whatever base_url a Builder names.
"""

import contextlib
import json
import socket

import pytest

from agents.adapters import AgentCallError, call_agent
from agents.models import AgentVersion, Tool
from evaluations.models import Trial
from governance import webhooks
from governance.actions.create_webhook import CreateWebhook
from governance.choices import WebhookEvent
from governance.models import AuditEntry, WebhookDelivery
from tests.support import factories
from tests.support.governance import api_client
from tests.support.loopback_agent import LoopbackAgent
from tests.support.loopback_webhook import LoopbackReceiver
from tests.support.schedules import SHAPE

SECRET = "bot-token-7f3a9c"
_REAL_GETADDRINFO = socket.getaddrinfo
# The attacker's own zone: a public address for the name the check asks about, loopback for
# the name the HTTP client asks about. Both names are the same URL host, `faß.attacker.test`.
ZONE = {"fass.attacker.test": "93.184.215.14", "xn--fa-hia.attacker.test": "127.0.0.1"}


@pytest.fixture
def attacker_zone(monkeypatch):
    """A resolver answering for the attacker's zone (as a DNS server would), everything else as
    before. `socket.getaddrinfo` encodes a str host with the idna codec, as the real one does."""

    def getaddrinfo(host, port, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        with contextlib.suppress(UnicodeError):
            name = name.encode("idna").decode()
        if name in ZONE:
            return _REAL_GETADDRINFO(ZONE[name], port, *args, **kwargs)
        return _REAL_GETADDRINFO(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def listener():
    with LoopbackAgent() as server:
        yield server


@pytest.fixture
def agent(builder):
    return factories.agent(owner=builder)


def create(builder, adapter, config):
    body = {"agent": "support-bot", "adapter": adapter, "config": config}
    return api_client(builder).post("/api/v1/versions/", body, format="json")


def port_of(server):
    return server.url.rsplit(":", 1)[1].split("/")[0]


# --- 1. IDNA: checked as one name, connected to as another ---------------------------------------


def test_http_agent_cannot_reach_loopback_through_an_idna_name(
    builder, agent, listener, settings, attacker_zone, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_AGENT_HOSTS = ["*"]  # the default: public addresses only
    url = f"http://faß.attacker.test:{port_of(listener)}/agent"

    response = create(builder, "http", {"url": url})
    if response.status_code == 201:  # let through on save: the run must then send nothing
        dataset_version = factories.dataset_version(cases=[("c1", "hi", {})], checks=[SHAPE])
        run = factories.start_run(
            builder, AgentVersion.objects.get(), dataset_version, django_capture_on_commit_callbacks
        )  # the engine's path (async client)
        trial = Trial.objects.get(run=run)
        with contextlib.suppress(AgentCallError):  # the one-off path (sync client)
            call_agent(AgentVersion.objects.get(), {"id": "c1", "input": "hi"})
        assert trial.status == "error", "the run's trial was answered from loopback"

    assert listener.requests == [], "the loopback listener was reached through '*'"


def test_openai_chat_cannot_reach_loopback_through_an_idna_name(
    builder, agent, listener, settings, attacker_zone
):
    settings.SHERLOCK_AGENT_HOSTS = ["*"]
    config = {
        "base_url": f"http://faß.attacker.test:{port_of(listener)}/v1",
        "model": "m",
        "max_retries": 0,
    }

    if create(builder, "openai_chat", config).status_code == 201:
        with contextlib.suppress(AgentCallError):
            call_agent(AgentVersion.objects.get(), {"id": "c1", "input": "hi"})

    assert listener.requests == [], "the loopback listener was reached through '*'"


def test_a_webhook_cannot_reach_loopback_through_an_idna_name(
    admin_user, settings, attacker_zone, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_WEBHOOK_HOSTS = ["*"]
    with LoopbackReceiver() as receiver:
        url = f"http://faß.attacker.test:{port_of(receiver)}/hook"
        try:
            CreateWebhook(acting_user=admin_user, url=url, events=["run.finished"]).execute()
        except Exception:  # refused on save: what should happen
            return
        with django_capture_on_commit_callbacks(execute=True):
            webhooks.notify(WebhookEvent.RUN_FINISHED, {"run": 1})

    assert receiver.received == [], WebhookDelivery.objects.values("status_code", "error")


# --- 2. a secret's prefix makes the value show in an error ------------------------------------


def test_a_secret_headers_prefix_cannot_put_its_value_in_the_trials_error(
    builder, agent, listener, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_AGENT_ENV = ["SUPPORT_BOT_TOKEN"]  # the operator's, for the named host
    monkeypatch.setenv("SUPPORT_BOT_TOKEN", SECRET)
    config = {
        "url": listener.url,
        "headers": {"X-Trace": {"env": "SUPPORT_BOT_TOKEN", "prefix": " "}},
    }
    response = create(builder, "http", config)
    if response.status_code == 400:  # a prefix that breaks the header refused: fine
        return

    dataset_version = factories.dataset_version(cases=[("c1", "hi", {})], checks=[SHAPE])
    run = factories.start_run(
        builder, AgentVersion.objects.get(), dataset_version, django_capture_on_commit_callbacks
    )

    trial = Trial.objects.get(run=run)
    shown = api_client(builder).get(f"/api/v1/trials/{trial.pk}/").content.decode()
    assert SECRET not in (trial.error or ""), trial.error
    assert SECRET not in shown


def test_a_tool_executors_secret_is_not_posted_to_the_model(builder, agent, settings, monkeypatch):
    """The model's endpoint asks for the tool; the executor's header is illegal; the error,
    value and all, goes back to the model as the tool's result. In a deployment the base_url is
    any public host (`*`, no api_key): the attacker's own."""
    settings.SHERLOCK_AGENT_ENV = ["SUPPORT_BOT_TOKEN"]
    monkeypatch.setenv("SUPPORT_BOT_TOKEN", SECRET)

    def model(request):
        if request["n"] == 1:
            call = {
                "id": "t1",
                "type": "function",
                "function": {"name": "orders_lookup", "arguments": "{}"},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            return 200, {"choices": [{"message": message, "finish_reason": "tool_calls"}]}
        message = {"role": "assistant", "content": "done"}
        return 200, {"choices": [{"message": message, "finish_reason": "stop"}]}

    with LoopbackAgent(answer=model) as llm, LoopbackAgent() as tool:
        config = {
            "base_url": f"{llm.url}/v1",
            "model": "m",
            "max_retries": 0,
            "tools": {
                "orders.lookup": {
                    "url": f"{tool.url}/orders",
                    "headers": {"X-Key": {"env": "SUPPORT_BOT_TOKEN", "prefix": " "}},
                }
            },
        }
        response = create(builder, "openai_chat", config)
        if response.status_code == 400:
            return
        version = AgentVersion.objects.get()
        version.tools.add(Tool.objects.create(name="orders.lookup"))
        transcript = call_agent(version, {"id": "c1", "input": "hi"})
        sent_to_model = b"".join(r["raw"] for r in llm.requests).decode()

    assert SECRET not in sent_to_model, "the secret was posted to the model's endpoint"
    assert SECRET not in json.dumps(transcript)


def test_a_secret_with_a_trailing_newline_is_not_shown_in_the_trials_error(
    builder, agent, listener, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """No prefix needed: a value read from a file (`$(cat token)`, a mounted secret) often ends
    in a newline, and the run then shows it to everyone who reads the trial."""
    settings.SHERLOCK_AGENT_ENV = ["SUPPORT_BOT_TOKEN"]
    monkeypatch.setenv("SUPPORT_BOT_TOKEN", SECRET + "\n")
    config = {"url": listener.url, "headers": {"Authorization": {"env": "SUPPORT_BOT_TOKEN"}}}
    assert create(builder, "http", config).status_code == 201

    dataset_version = factories.dataset_version(cases=[("c1", "hi", {})], checks=[SHAPE])
    run = factories.start_run(
        builder, AgentVersion.objects.get(), dataset_version, django_capture_on_commit_callbacks
    )

    assert SECRET not in (Trial.objects.get(run=run).error or "")


def test_a_verifiers_secret_is_not_kept_in_its_evidence(settings, monkeypatch):
    from agents.verifiers.runners import run_verifier

    settings.SHERLOCK_VERIFIER_HOSTS = ["127.0.0.1"]
    settings.SHERLOCK_VERIFIER_ENV = ["CRM_TOKEN"]
    monkeypatch.setenv("CRM_TOKEN", SECRET + "\n")
    with LoopbackAgent() as crm:
        spec = {
            "kind": "http",
            "url": f"{crm.url}/contacts/1",
            "headers_env": {"Authorization": "CRM_TOKEN"},
            "predicate": {"path": "$.ok", "op": "truthy"},
        }
        state, evidence = run_verifier(spec, {})

    assert SECRET not in json.dumps(evidence), evidence


# --- 3. a verifier's refusal is audited like the others -----------------------------------------


def test_a_verifier_naming_sherlocks_secret_is_refused_and_audited(editor):
    draft = factories.dataset_version(cases=[("existing", "hello", {})], frozen=False)
    verifier = {
        "kind": "http",
        "url": "https://crm.example.com/x",
        "headers_env": {"X-Key": "SHERLOCK_AUDIT_KEY"},
        "predicate": {"path": "$.ok", "op": "truthy"},
    }
    body = {"dataset_version": draft.pk, "key": "refund", "input": "hi", "outcome_check": verifier}

    response = api_client(editor).post("/api/v1/cases/", body, format="json")

    assert response.status_code == 400, response.content
    assert "SHERLOCK_AUDIT_KEY is Sherlock's own secret" in response.json()["detail"]
    assert AuditEntry.objects.filter(action__endswith=".refused").exists(), (
        "a verifier's egress refusal is not audited (agents.version.refused and "
        "governance.webhook.refused are)"
    )


# --- 4. the OpenAI SDK's own environment reaches any endpoint a Builder names --------------


def test_openai_chat_sends_no_value_from_the_sdks_environment_variables(
    builder, agent, listener, monkeypatch
):
    """The agent's SDK client reads OPENAI_CUSTOM_HEADERS, OPENAI_ORG_ID, OPENAI_PROJECT_ID
    (and OPENAI_ADMIN_KEY) from the worker's environment, the judge's configuration, and sends
    them to the Builder's base_url: no SHERLOCK_AGENT_ENV listing, and `*` suffices."""
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "X-Gateway-Key: gw-secret-1")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-secret-2")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-secret-3")
    monkeypatch.setenv("OPENAI_ADMIN_KEY", "admin-secret-4")
    config = {"base_url": f"{listener.url}/v1", "model": "m", "max_retries": 0}
    assert create(builder, "openai_chat", config).status_code == 201

    with contextlib.suppress(AgentCallError):
        call_agent(AgentVersion.objects.get(), {"id": "c1", "input": "hi"})

    assert listener.requests, "nothing reached the listener"
    sent = json.dumps([r["headers"] for r in listener.requests])
    leaked = [
        v for v in ("gw-secret-1", "org-secret-2", "proj-secret-3", "admin-secret-4") if v in sent
    ]
    assert leaked == [], f"sent to the Builder's endpoint: {leaked}"
