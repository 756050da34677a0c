"""Agents under test for the test suite: small callables the `python` adapter calls."""

import json
import os
import time


def echo(case, **_):
    """Answers the input back as text, calling the tools the case expects."""
    return {
        "output": f"You said: {case['input']}",
        "tool_calls": [{"name": t["name"], "arguments": {}} for t in case["expected_tools"]],
    }


def scripted(case, **_):
    """Behaves as the case's input dict says: output, tools, an exception, a JSON answer."""
    spec = case["input"] if isinstance(case["input"], dict) else {}
    if spec.get("raise"):
        raise RuntimeError(spec["raise"])
    output = spec.get("output", "ok")
    if spec.get("json"):
        output = json.dumps(spec["json"])
    return {
        "output": output,
        "tool_calls": [{"name": n, "arguments": {}} for n in spec.get("tools", [])],
        "latency_ms": spec.get("latency_ms", 5),
    }


_counter = {}


def flaky(case, **_):
    """Alternates between a correct and a wrong tool call on every call for the same case."""
    key = case["id"]
    _counter[key] = _counter.get(key, 0) + 1
    tools = ["kb.search"] if _counter[key] % 2 else ["wrong.tool"]
    return {"output": "answer", "tool_calls": [{"name": n, "arguments": {}} for n in tools]}


def slow(case, **_):
    """Sleeps (for the worker-process tests) and records which process ran it."""
    time.sleep(float(os.environ.get("SHERLOCK_TEST_AGENT_DELAY", "0.05")))
    return {"output": f"done by {os.getpid()}", "tool_calls": []}


def reporting(case, **_):
    """Answers the transcript its case's input holds (``{"answer": {...}}``): an agent that
    reports whatever figures a test chooses (a cost, token usage, a latency)."""
    spec = case["input"] if isinstance(case["input"], dict) else {}
    return dict(spec.get("answer") or {"output": "ok"})


def greeter(case, *, greeting, punctuation="."):
    """Answers with a configured greeting (its `kwargs`: a required and an optional one)."""
    return {"output": f"{greeting}, {case['input']}{punctuation}"}
