"""`python`: the agent is a Python callable in this process (docs/adapters.md).

Config `{"callable": "package.module.function", "kwargs": {...}}`. The callable gets the whole
case dict (docs/checks.md, "The case") and the kwargs, and returns a transcript dict, or any
other value, taken as the output. It runs in the worker's threads, so it must be thread-safe.
"""

from django.utils.module_loading import import_string

from agents.adapters.base import AgentCallError, PreparedAgent

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["callable"],
    "properties": {
        "callable": {"type": "string", "minLength": 1},
        "kwargs": {"type": "object"},
        "model": {"type": "string", "minLength": 1},
    },
}


def validate(config):
    try:
        import_string(config["callable"])
    except ImportError as exc:
        raise ValueError(f"config.callable: cannot import {config['callable']!r}: {exc}") from None


class PythonAgent(PreparedAgent):
    def __init__(self, version):
        self.function = import_string(version.config["callable"])
        self.kwargs = version.config.get("kwargs") or {}
        self.model = version.config.get("model")

    def _call(self, case, repetition):
        try:
            return self.function(case, **self.kwargs)
        except Exception as exc:  # the agent's own failure is data, not a crash of the worker
            raise AgentCallError(f"{type(exc).__name__}: {exc}") from exc
