"""The team's task function: found by `package.module:function`, called on each work item, its
return read as a transcript.

The function is called with the case's `input` and its `context` (the case's contexts, tools
and metadata, the view an adapter gets), or with `input` alone when it takes one parameter. It
may be sync or async. What it returns:

- a `str`: the agent's final answer, sent as `{"output": str}`;
- a `dict` in the transcript format (docs/checks.md "The transcript": `output`, `tool_calls`,
  `contexts`, `latency_ms`, `usage`, ...), sent as is; it must be JSON.

Anything else (None, a number, a list, a dict that is not JSON, a non-string key) is an
`invalid` error item, and an exception an `raised` one: an agent error in the run, never a
missing case. `latency_ms` is the client's measure of the call when the dict does not say.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast


class TaskNotFound(Exception):
    """`--task` names nothing callable."""


class InvalidReturn(Exception):
    """The function returned something that is no transcript."""


def load(spec: str) -> Callable[..., Any]:
    """`package.module:function` imported (the working directory first on the path, as
    `python -m` would)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise TaskNotFound(f"--task must be package.module:function, not {spec!r}")
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import error in the team's code is theirs to see
        raise TaskNotFound(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from exc
    target: Any = module
    for part in attribute.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise TaskNotFound(f"{module_name} has no {attribute}")
    if not callable(target):
        raise TaskNotFound(f"{spec} is not callable")
    return cast(Callable[..., Any], target)


def is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an instance with an async __call__
    )


def arity(fn: Callable[..., Any]) -> int:
    """1 when the function takes only the input, else 2 (input and context)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in parameters)
    return 1 if len(positional) == 1 and not varargs else 2


def arguments(fn: Callable[..., Any], item: dict[str, Any]) -> tuple[Any, ...]:
    if arity(fn) == 1:
        return (item.get("input"),)
    return (item.get("input"), item.get("context") or {})


def transcript(value: Any, latency_ms: float) -> dict[str, Any]:
    """The function's return as a transcript; InvalidReturn when it is none."""
    if isinstance(value, str):
        return {"output": value, "latency_ms": round(latency_ms, 3)}
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise InvalidReturn("the returned dict has keys that are not strings")
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidReturn(f"the returned dict is not JSON: {exc}") from exc
        found = dict(value)
        found.setdefault("latency_ms", round(latency_ms, 3))
        return found
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    raise InvalidReturn(
        f"the task returned {type(value).__name__} {shown}: return a str (the output) or a "
        "dict in the transcript format"
    )
