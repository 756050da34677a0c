"""Calling an agent version the way the run engine's event loop does."""

import asyncio

from agents.adapters import prepare
from sherlock.core.aio import aclose_loop_clients


def call_on_loop(version, case, *, repetition=1):
    """`call_agent`, but awaited (`PreparedAgent.acall`) on an event loop of its own, whose
    HTTP clients are closed before it ends, as the engine's shards do."""

    agent = prepare(version)  # reads the version's tools: before the loop, as a shard does

    async def call():
        try:
            return await agent.acall(case, repetition=repetition)
        finally:
            await aclose_loop_clients()

    return asyncio.run(call())
