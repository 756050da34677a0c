"""Adapters call the agent under test and return a transcript (docs/checks.md has the format).

`python`: config `{"callable": "package.module.function"}`; the callable gets the case's check
input dict and returns a transcript dict (or a string, taken as the output).
"""

import time

from django.utils.module_loading import import_string

from agents.choices import Adapter

_SCHEMAS = {
    Adapter.PYTHON: {"required": {"callable": str}},
    Adapter.HTTP: {"required": {"url": str}},
    Adapter.OPENAI_CHAT: {"required": {"model": str}},
    Adapter.REPLAY: {"required": {}},
}


def validate_config(adapter, config):
    """Return the config if it fits the adapter, else raise ValueError naming the field."""
    if adapter not in _SCHEMAS:
        raise ValueError(f"adapter: unknown adapter {adapter!r}")
    if not isinstance(config, dict):
        raise ValueError("config: must be a JSON object")
    for field, kind in _SCHEMAS[adapter]["required"].items():
        if not isinstance(config.get(field), kind) or not config.get(field):
            raise ValueError(f"config.{field}: required ({kind.__name__})")
    if adapter == Adapter.PYTHON:
        try:
            import_string(config["callable"])
        except ImportError as exc:
            raise ValueError(
                f"config.callable: cannot import {config['callable']!r}: {exc}"
            ) from None
    return config


class AgentCallError(Exception):
    """The agent under test failed to answer; the trial ends in `error`, its checks too."""


def call_agent(version, case_input):
    """Run one case through the version's adapter; return a transcript dict with `latency_ms`."""
    if version.adapter != Adapter.PYTHON:
        raise AgentCallError(f"adapter {version.adapter!r} is not available yet")
    fn = import_string(version.config["callable"])
    started = time.perf_counter()
    try:
        result = fn(case_input, **version.config.get("kwargs", {}))
    except Exception as exc:  # the agent's own failure is data, not a crash of the worker
        raise AgentCallError(f"{type(exc).__name__}: {exc}") from exc
    elapsed_ms = (time.perf_counter() - started) * 1000
    transcript = {"output": result} if not isinstance(result, dict) else dict(result)
    transcript.setdefault("output", "")
    transcript.setdefault("tool_calls", [])
    transcript.setdefault("latency_ms", round(elapsed_ms, 3))
    return transcript
