"""No secret leaves by configuration: an agent version may name only the
environment variables the operator listed (never Sherlock's own secrets) and send them only to
hosts the operator named; its destinations follow the operator's host rules, with loopback,
link-local, private addresses and credentials in URLs refused unless explicitly allowed. Each
refusal is a 400 on `config` when the version is saved, audited, and again an agent error, with
nothing sent, when a run uses a version saved under laxer rules."""

import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agents.adapters import AgentCallError, call_agent, validate_config
from agents.models import AgentVersion
from evaluations.models import Trial
from governance.models import AuditEntry
from sherlock.core.egress import EgressRefused
from tests.support import factories
from tests.support.governance import api_client
from tests.support.loopback_agent import LoopbackAgent
from tests.support.schedules import SHAPE

ROOT = Path(__file__).resolve().parents[2]
AUDIT_KEY = "k" * 40  # what a deployment keeps in SHERLOCK_AUDIT_KEY
DATABASE = "postgres://sherlock:db-password@db.internal:5432/sherlock"


@pytest.fixture
def secrets_in_environment(monkeypatch):
    monkeypatch.setenv("SHERLOCK_AUDIT_KEY", AUDIT_KEY)
    monkeypatch.setenv("DATABASE_URL", DATABASE)
    monkeypatch.setenv("SUPPORT_BOT_TOKEN", "bot-token")


@pytest.fixture
def listener():
    """The issue's listener on loopback: it records everything it is sent."""
    with LoopbackAgent() as server:
        yield server


def create(builder, adapter, config):
    body = {"agent": "support-bot", "adapter": adapter, "config": config}
    return api_client(builder).post("/api/v1/versions/", body, format="json")


def assert_refused(response, *phrases):
    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["code"] == "egress_refused" and body.get("field", "config") == "config", body
    for phrase in phrases:
        assert phrase in body["detail"], body
    assert not AgentVersion.objects.exists()
    refusal = AuditEntry.objects.get(action="agents.version.refused")
    assert refusal.after == {"verb": "create", "code": "egress_refused"}
    assert all(phrase in refusal.reason for phrase in phrases)


@pytest.fixture
def agent(builder):
    return factories.agent(owner=builder)


# --- on save: the configs, through the API -----------------------------------------------


def test_a_builder_cannot_send_sherlocks_own_secrets_even_when_listed(
    builder, agent, listener, settings
):
    settings.SHERLOCK_AGENT_ENV = ["SHERLOCK_AUDIT_KEY", "DATABASE_URL"]  # a careless operator
    config = {
        "url": f"{listener.url}/agent",
        "headers": {"X-Team": {"env": "SHERLOCK_AUDIT_KEY"}, "X-Db": {"env": "DATABASE_URL"}},
    }

    response = create(builder, "http", config)

    assert_refused(response, "config.headers.X-Team", "SHERLOCK_AUDIT_KEY is Sherlock's own secret")


@pytest.mark.parametrize(
    "variable", ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "OPENAI_API_KEY", "SHERLOCK_ANYTHING"]
)
def test_every_one_of_sherlocks_secrets_is_refused(builder, agent, listener, variable):
    config = {"url": listener.url, "headers": {"X-Leak": {"env": variable}}}

    assert_refused(create(builder, "http", config), "config.headers.X-Leak", variable)


def test_a_variable_the_operator_did_not_list_is_refused(builder, agent, listener):
    config = {"url": listener.url, "headers": {"Authorization": {"env": "SUPPORT_BOT_TOKEN"}}}

    assert_refused(
        create(builder, "http", config),
        "config.headers.Authorization",
        "SHERLOCK_AGENT_ENV lists the environment variables that are",
    )


def test_openai_chat_cannot_send_the_audit_key_to_the_metadata_address(builder, agent, settings):
    settings.SHERLOCK_AGENT_HOSTS = ["*"]
    config = {
        "base_url": "http://169.254.169.254/latest",
        "model": "m",
        "api_key": {"env": "SHERLOCK_AUDIT_KEY"},
    }

    assert_refused(create(builder, "openai_chat", config), "config.api_key", "own secret")
    without_key = {k: v for k, v in config.items() if k != "api_key"}
    response = create(builder, "openai_chat", without_key)
    assert response.status_code == 400 and "link-local" in response.json()["detail"]


def test_a_listed_variable_goes_only_to_a_host_the_operator_named(builder, agent, settings):
    settings.SHERLOCK_AGENT_ENV = ["SUPPORT_BOT_TOKEN"]
    settings.SHERLOCK_AGENT_HOSTS = ["*"]
    config = {
        "url": "https://agent.example.com/answer",
        "headers": {"Authorization": {"env": "SUPPORT_BOT_TOKEN"}},
    }

    assert_refused(create(builder, "http", config), "config.url", "only allowed by '*'")
    settings.SHERLOCK_AGENT_HOSTS = ["*", "agent.example.com"]
    assert create(builder, "http", config).status_code == 201


@pytest.mark.parametrize(
    "url, phrase",
    [
        ("http://127.0.0.1:8000/agent", "loopback"),
        ("http://127.1:8000/agent", "resolves to 127.0.0.1"),
        ("http://[::1]:8000/agent", "loopback"),
        ("http://[::ffff:169.254.169.254]/", "link-local"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://10.0.0.8/agent", "private"),
        ("http://192.168.1.20/agent", "private"),
        ("http://0.0.0.0:5432/", "unspecified"),
        ("http://localhost:5432/", "local name"),
        ("http://metadata.google.internal/computeMetadata/v1/", "local name"),
        ("http://redis:6379/", "local name"),
        ("https://builder:hunter2@agent.example.com/answer", "credentials in a URL"),
    ],
)
def test_the_default_host_rule_refuses_internal_destinations(builder, agent, settings, url, phrase):
    settings.SHERLOCK_AGENT_HOSTS = ["*"]  # the default

    assert_refused(create(builder, "http", {"url": url}), "config.url", phrase)


def test_a_name_is_judged_by_the_addresses_it_resolves_to(settings, monkeypatch):
    settings.SHERLOCK_AGENT_HOSTS = ["*"]
    answers = {"crm.example.com": "10.1.2.3", "public.example.com": "93.184.215.14"}

    def getaddrinfo(host, *args, **kwargs):
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], 0))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(EgressRefused, match="resolves to 10.1.2.3, a private address"):
        validate_config("http", {"url": "https://crm.example.com/x"})
    validate_config("http", {"url": "https://public.example.com/x"})
    settings.SHERLOCK_AGENT_HOSTS = ["*", "10.0.0.0/8"]  # the operator lists the network
    validate_config("http", {"url": "https://crm.example.com/x"})


def test_an_address_the_operator_lists_is_allowed(builder, agent, settings):
    settings.SHERLOCK_AGENT_HOSTS = ["10.0.0.8"]

    assert create(builder, "http", {"url": "http://10.0.0.8/agent"}).status_code == 201
    response = create(builder, "http", {"url": "https://api.example.com/agent"})
    assert response.status_code == 400 and "not allowed" in response.json()["detail"]


def test_a_tool_executor_follows_the_same_rule(builder, agent, settings):
    settings.SHERLOCK_AGENT_HOSTS = ["*"]
    config = {
        "base_url": "https://llm.example.com/v1",
        "model": "m",
        "tools": {"orders.lookup": {"url": "http://169.254.169.254/latest/meta-data/"}},
    }

    assert_refused(create(builder, "openai_chat", config), "config.tools.orders.lookup.url")


def test_changing_a_draft_to_a_refused_config_is_refused_and_audited(builder, agent, listener):
    version = AgentVersion.objects.get(
        pk=create(builder, "http", {"url": listener.url}).json()["id"]
    )
    config = {"url": listener.url, "headers": {"X-Db": {"env": "DATABASE_URL"}}}

    response = api_client(builder).patch(
        f"/api/v1/versions/{version.pk}/", {"config": config}, format="json"
    )

    assert response.status_code == 400 and response.json()["code"] == "egress_refused"
    version.refresh_from_db()
    assert version.config == {"url": listener.url}
    refusal = AuditEntry.objects.get(action="agents.version.refused")
    assert refusal.after["verb"] == "update" and "DATABASE_URL" in refusal.reason


# --- when it runs: a version saved under laxer rules sends nothing --------------------------------


def run_of(builder, version, capture):
    dataset_version = factories.dataset_version(cases=[("c1", "hi", {})], checks=[SHAPE])
    return factories.start_run(builder, version, dataset_version, capture)


def written_around_the_actions(agent, config):
    """A row as an older release saved it, or as a script writes it: no action checked it."""
    return AgentVersion.objects.create(agent=agent, number=1, adapter="http", config=config)


def test_a_stored_version_naming_sherlocks_secrets_sends_nothing_when_run(
    builder, agent, listener, secrets_in_environment, django_capture_on_commit_callbacks
):
    version = written_around_the_actions(
        agent,
        {
            "url": f"{listener.url}/agent",
            "headers": {"X-Team": {"env": "SHERLOCK_AUDIT_KEY"}, "X-Db": {"env": "DATABASE_URL"}},
        },
    )

    run = run_of(builder, version, django_capture_on_commit_callbacks)

    trial = Trial.objects.get(run=run)
    assert trial.status == "error"
    # The first header refused names its variable (PostgreSQL's JSONB orders the keys its way).
    assert any(
        f"{name} is Sherlock's own secret" in trial.error
        for name in ("SHERLOCK_AUDIT_KEY", "DATABASE_URL")
    )
    assert listener.requests == []


def test_a_variable_unlisted_since_the_version_was_saved_is_not_sent(
    builder, agent, listener, settings, secrets_in_environment, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_AGENT_ENV = ["SUPPORT_BOT_TOKEN"]
    config = {"url": listener.url, "headers": {"Authorization": {"env": "SUPPORT_BOT_TOKEN"}}}
    assert create(builder, "http", config).status_code == 201
    settings.SHERLOCK_AGENT_ENV = []

    run = run_of(builder, AgentVersion.objects.get(), django_capture_on_commit_callbacks)

    trial = Trial.objects.get(run=run)
    assert trial.status == "error" and "SHERLOCK_AGENT_ENV" in trial.error
    assert listener.requests == []


def test_a_host_no_longer_allowed_is_not_called(
    builder, agent, listener, settings, django_capture_on_commit_callbacks
):
    assert create(builder, "http", {"url": listener.url}).status_code == 201
    settings.SHERLOCK_AGENT_HOSTS = ["*"]  # the operator stopped allowing loopback

    run = run_of(builder, AgentVersion.objects.get(), django_capture_on_commit_callbacks)

    trial = Trial.objects.get(run=run)
    assert trial.status == "error" and "loopback" in trial.error
    assert listener.requests == []


def test_a_listed_variable_to_a_listed_host_is_sent(
    builder, agent, listener, settings, secrets_in_environment, django_capture_on_commit_callbacks
):
    settings.SHERLOCK_AGENT_ENV = ["SUPPORT_BOT_TOKEN"]
    config = {"url": listener.url, "headers": {"Authorization": {"env": "SUPPORT_BOT_TOKEN"}}}
    assert create(builder, "http", config).status_code == 201

    run = run_of(builder, AgentVersion.objects.get(), django_capture_on_commit_callbacks)

    assert Trial.objects.get(run=run).status != "error"
    assert [r["headers"]["authorization"] for r in listener.requests] == ["bot-token"]


class Redirector(BaseHTTPRequestHandler):
    """An allowed endpoint that sends every request on to `self.server.target`."""

    def do_POST(self):
        self.send_response(307)
        self.send_header("Location", self.server.target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_openai_chat_does_not_follow_a_redirect_off_the_allowed_host(
    builder, agent, listener, settings, secrets_in_environment
):
    settings.SHERLOCK_AGENT_ENV = ["SUPPORT_BOT_TOKEN"]
    redirector = ThreadingHTTPServer(("127.0.0.1", 0), Redirector)
    redirector.target = f"{listener.url}/v1/chat/completions"
    threading.Thread(target=redirector.serve_forever, daemon=True).start()
    try:
        config = {
            "base_url": f"http://127.0.0.1:{redirector.server_address[1]}/v1",
            "model": "m",
            "api_key": {"env": "SUPPORT_BOT_TOKEN"},
            "max_retries": 0,
        }
        assert create(builder, "openai_chat", config).status_code == 201

        with pytest.raises(AgentCallError, match="307"):
            call_agent(AgentVersion.objects.get(), {"id": "c1", "input": "hi"})
    finally:
        redirector.shutdown()
        redirector.server_close()
    assert listener.requests == []


# --- the operator's lists ----------------------------------------------------------------------


def settings_of(**env):
    """What a fresh process makes of these variables (the tests' own overrides not applied)."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SHERLOCK_AGENT", "SHERLOCK_VERIFIER", "SHERLOCK_WEBHOOK"))
    }
    code = (
        "from django.conf import settings as s; from agents.adapters import validate_config as v\n"
        "print(s.SHERLOCK_AGENT_CALLABLES, s.SHERLOCK_AGENT_HOSTS, s.SHERLOCK_AGENT_ENV)\n"
        "for path in ('agents.demo.write_ledger', 'agents.demo.Path'):\n"
        "    try: v('python', {'callable': path}); print(path, 'allowed')\n"
        "    except ValueError as exc: print(exc)\n"
    )
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env={**environment, **env},
        capture_output=True,
        text=True,
    )


def test_the_default_agent_allowlist_names_the_demo_agents_only():
    result = settings_of()

    assert result.returncode == 0, result.stderr
    first, *refusals = result.stdout.splitlines()
    assert first == "['agents.demo.support_bot', 'agents.demo.refund_agent'] ['*'] []"
    assert len(refusals) == 2 and all("is not allowed" in line for line in refusals)


@pytest.mark.parametrize(
    "env", [{"SHERLOCK_AGENT_ENV": "SHERLOCK_AUDIT_KEY"}, {"SHERLOCK_VERIFIER_ENV": "SECRET_KEY"}]
)
def test_listing_sherlocks_own_secret_stops_start_up(env):
    result = settings_of(**env)

    assert result.returncode != 0
    assert "is Sherlock's own secret" in result.stderr


def test_the_admin_shows_the_refusal_on_the_config_field_and_audits_it(client, builder, agent):
    client.force_login(builder)

    page = client.post(
        "/admin/agents/agentversion/add/",
        {
            "agent": agent.pk,
            "adapter": "http",
            "config": '{"url": "http://169.254.169.254/latest/meta-data/"}',
            "notes": "",
        },
    )

    assert page.status_code == 200 and "link-local address" in page.content.decode()
    assert not AgentVersion.objects.exists()
    refusal = AuditEntry.objects.get(action="agents.version.refused")
    assert refusal.actor_id == builder.pk and refusal.after["code"] == "egress_refused"
