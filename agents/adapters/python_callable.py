"""`python`: the agent is a Python callable in this process (docs/adapters.md).

Config `{"callable": "package.module.function", "kwargs": {...}}`. The callable gets the whole
case dict (docs/checks.md, "The case") and the kwargs, and returns a transcript dict, or any
other value, taken as the output. In a run it runs on the engine's bounded thread pool (the
engine's event loop awaits it there), so it must be thread-safe.
"""

import inspect

from agents.adapters.base import AgentCallError, PreparedAgent
from sherlock.core.imports import import_allowed

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["callable"],
    "properties": {
        "callable": {
            "type": "string",
            "minLength": 1,
            "description": "Dotted path of the function that answers a case, e.g. "
            "agents.demo.support_bot (allowed by SHERLOCK_AGENT_CALLABLES).",
        },
        "kwargs": {"type": "object", "description": "Keyword arguments passed to it."},
        "model": {
            "type": "string",
            "minLength": 1,
            "description": "The model it calls, to price its tokens (optional).",
        },
    },
}


def validate(config):
    try:
        function = import_allowed(config["callable"], "SHERLOCK_AGENT_CALLABLES")
    except ValueError as exc:
        raise ValueError(f"config.callable: {exc}") from None
    check_arguments(function, config.get("kwargs") or {})


def check_arguments(function, kwargs):
    """ValueError naming `config.kwargs` unless `function(case, **kwargs)` fits its signature:
    a keyword it does not take, or a required one missing, would fail every trial at run time,
    so it is refused when the version is saved. A callable whose signature cannot be read (some
    built-ins) is taken as it is."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    try:
        signature.bind({}, **kwargs)
    except TypeError as exc:
        name = getattr(function, "__name__", "the callable")
        raise ValueError(f"config.kwargs: {exc} (it is {name}{signature})") from None


class PythonAgent(PreparedAgent):
    def __init__(self, version):
        try:
            self.function = import_allowed(version.config["callable"], "SHERLOCK_AGENT_CALLABLES")
        except ValueError as exc:  # settings changed since the version was saved
            raise AgentCallError(f"config.callable: {exc}") from None
        self.kwargs = version.config.get("kwargs") or {}
        self.model = version.config.get("model")

    def _call(self, case, repetition):
        try:
            return self.function(case, **self.kwargs)
        except Exception as exc:  # the agent's own failure is data, not a crash of the worker
            raise AgentCallError(f"{type(exc).__name__}: {exc}") from exc
