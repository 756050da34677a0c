"""Adapters call the agent under test and return a transcript (docs/adapters.md).

Five adapters, one module each: `python` (a callable in this process), `http` (a service that
gets each case as JSON), `openai_chat` (a tool-using chat loop against an OpenAI-compatible
endpoint), `replay` (transcripts recorded elsewhere) and `client` (the team's own code, run by
the `sherlock` client, which uploads its transcripts: never called here). Each declares its
config as a JSON Schema plus the rules a schema cannot say; `validate_config` names the field
at fault.

The run engine calls `prepare(version)` once per shard and `agent.call(case, repetition=r)` per
trial from many threads; `call_agent` does both for one-off use.
"""

from agents.adapters import client, http_endpoint, openai_chat, python_callable, replay
from agents.adapters.base import AgentCallError, PreparedAgent, validate_schema
from agents.choices import Adapter

__all__ = [
    "ADAPTERS",
    "AgentCallError",
    "PreparedAgent",
    "call_agent",
    "prepare",
    "validate_config",
]

# adapter -> (module with SCHEMA and validate(config), PreparedAgent class)
ADAPTERS = {
    Adapter.PYTHON: (python_callable, python_callable.PythonAgent),
    Adapter.HTTP: (http_endpoint, http_endpoint.HttpAgent),
    Adapter.OPENAI_CHAT: (openai_chat, openai_chat.OpenAIChatAgent),
    Adapter.REPLAY: (replay, replay.ReplayAgent),
    Adapter.CLIENT: (client, client.ClientAgent),
}


def validate_config(adapter, config):
    """Return the config if it fits the adapter, else raise ValueError naming the field."""
    if adapter not in ADAPTERS:
        raise ValueError(f"adapter: unknown adapter {adapter!r}")
    if not isinstance(config, dict):
        raise ValueError("config: must be a JSON object")
    module, _ = ADAPTERS[adapter]
    validate_schema(module.SCHEMA, config)
    module.validate(config)
    return config


def prepare(version):
    """The version ready to call: imports, tool lists and clients set up once."""
    try:
        _, agent_class = ADAPTERS[version.adapter]
    except KeyError:
        raise AgentCallError(f"adapter {version.adapter!r} is not available") from None
    try:
        return agent_class(version)
    except (ImportError, KeyError, ValueError) as exc:
        raise AgentCallError(f"the {version.adapter} config cannot be used: {exc}") from exc


def call_agent(version, case_input, *, repetition=1):
    """Run one case through the version's adapter; return a transcript dict with `latency_ms`."""
    return prepare(version).call(case_input, repetition=repetition)
