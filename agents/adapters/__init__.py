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
from agents.adapters.base import AgentCallError, PreparedAgent, schema_errors, validate_schema
from agents.choices import Adapter

__all__ = [
    "ADAPTERS",
    "AgentCallError",
    "PreparedAgent",
    "call_agent",
    "config_errors",
    "prepare",
    "scalar_settings",
    "validate_config",
]

# The JSON Schema types a form shows as one field of its own (text, a number, a choice); the
# others (objects, lists, one-of) are edited as JSON (docs/adapters.md).
SCALAR_TYPES = {"string", "number", "integer", "boolean"}

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


def config_errors(adapter, config):
    """Every reason `config` does not fit `adapter`, each "config.<field>: <problem>": all the
    schema's errors at once, else the first of the rules a schema cannot say (egress, secrets)."""
    if adapter not in ADAPTERS:
        return [f"adapter: unknown adapter {adapter!r}"]
    if not isinstance(config, dict):
        return ["config: must be a JSON object"]
    module, _ = ADAPTERS[adapter]
    errors = schema_errors(module.SCHEMA, config)
    if errors:
        return errors
    try:
        module.validate(config)
    except ValueError as exc:  # EgressRefused is one: the caller audits it (agents.admin)
        return [str(exc)]
    return []


def scalar_settings(adapter):
    """The settings of `adapter` a form shows as fields of their own, from its SCHEMA: a list
    of (name, property schema, required), in the schema's order; the rest is JSON."""
    schema = ADAPTERS[adapter][0].SCHEMA
    required = set(schema.get("required", ()))
    return [
        (name, spec, name in required)
        for name, spec in schema["properties"].items()
        if spec.get("type") in SCALAR_TYPES or "enum" in spec
    ]


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
