"""Task functions a team could write, for the client's tests (`--task
tests.client.tasks_under_test:NAME`). Each reads the case's input as the loopback and live
servers' datasets hold it: `{"question": ...}` with a `mode` the tests choose per case."""

import asyncio
import os
import threading
import time

PEAK = {"now": 0, "max": 0}
_lock = threading.Lock()


def passes(input, context):
    return f"ok: {input.get('question')}"


def fails(input, context):
    return "no"


def transcript(input, context):
    return {"output": "ok", "tool_calls": [], "contexts": context.get("contexts", [])}


def raises(input, context):
    raise RuntimeError("the agent fell over")


def hangs(input, context):
    time.sleep(3600)


def garbage(input, context):
    return 42


def only_input(input):
    return "ok " + str(input)


def mixed(input, context):
    """Case 1 raises, case 2 hangs, case 3 returns garbage, the rest pass."""
    question = str(input.get("question"))
    if question.endswith("1"):
        raise ValueError("bad case")
    if question.endswith("2"):
        time.sleep(3600)
    if question.endswith("3"):
        return ["not", "a", "transcript"]
    return "ok"


def counted(input, context):
    """Sleeps a little and records the peak of calls in flight."""
    with _lock:
        PEAK["now"] += 1
        PEAK["max"] = max(PEAK["max"], PEAK["now"])
    time.sleep(0.02)
    with _lock:
        PEAK["now"] -= 1
    return "ok"


async def async_passes(input, context):
    await asyncio.sleep(0.01)
    return {"output": "ok async"}


async def async_hangs(input, context):
    await asyncio.sleep(3600)


def slow(input, context):
    """For the kill-and-resume test: each call takes SHERLOCK_TEST_TASK_SECONDS, and leaves a
    line in SHERLOCK_TEST_CALLS (one per call, so a test can count calls across processes)."""
    time.sleep(float(os.environ.get("SHERLOCK_TEST_TASK_SECONDS", "0.05")))
    calls = os.environ.get("SHERLOCK_TEST_CALLS")
    if calls:
        with open(calls, "a") as log:
            log.write(f"{input.get('question')}\n")
    return "ok"


def refunds(input, context):
    """The live dataset's cases pass: the expected tool is called."""
    return {
        "output": "Refunded.",
        "tool_calls": [{"name": "payments.refund", "arguments": {}}],
        "cost_usd": 0.0001,
    }


def no_refund(input, context):
    """The live dataset's cases fail: no tool is called."""
    return {"output": "I cannot help.", "tool_calls": [], "cost_usd": 0.0001}


def billed_refund(case, **_):
    """A `python` agent Sherlock executes (`sherlock evaluate`): refunds, reporting its cost."""
    return refunds(case["input"], {})


def billed_silence(case, **_):
    return no_refund(case["input"], {})


def refunds_slowly(input, context):
    time.sleep(float(os.environ.get("SHERLOCK_TEST_TASK_SECONDS", "0.05")))
    calls = os.environ.get("SHERLOCK_TEST_CALLS")
    if calls:
        with open(calls, "a") as log:
            log.write(f"{input.get('question')}\n")
    return refunds(input, context)


def refunds_mixed(input, context):
    """case-1 raises, case-2 hangs, case-3 returns garbage, the rest pass."""
    question = str(input.get("question"))
    if question.endswith("1"):
        raise ValueError("bad case")
    if question.endswith("2"):
        time.sleep(3600)
    if question.endswith("3"):
        return 3.5
    return refunds(input, context)


def refunds_hostile(input, context):
    """The live dataset's cases, with the outputs models really give: case-0 half an emoji pair
    (a lone surrogate), case-1 a NUL, case-2 an answer of 1.5 MB (over the item limit), case-3
    raises with a NUL and a lone surrogate in its message; the others pass, each with 900 KB of
    retrieved contexts, so that their batches together are over 2.5 MB."""
    question = str(input.get("question"))
    answer = refunds(input, context)
    if question.endswith(" 0"):
        return {**answer, "output": "Refunded \ud83d."}
    if question.endswith(" 1"):
        return {**answer, "output": "Refunded\x00."}
    if question.endswith(" 2"):
        return {**answer, "output": "x" * 1_500_000}
    if question.endswith(" 3"):
        raise ValueError("bad \x00 byte \udc80 here")
    return {**answer, "contexts": ["policy text " * 75_000]}
