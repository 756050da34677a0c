"""Judge questions in flight: CPU per question, blocking threads against the event loop.

Asks N distinct questions, C in flight at a time, through the real judge client (official
OpenAI SDK, cache on, recording to memory) against the loopback OpenAI-compatible server
(tests/support/llm_server.py) with a fixed latency L, run in a subprocess so that its CPU is
not counted. `--mode threads` asks with `JudgeClient.ask` from a pool of C threads (how the run
engine judged before its async rework); `--mode loop` awaits `JudgeClient.aask` as C coroutines
on one
event loop (how a shard judges now), through the loop's `AsyncOpenAI` over aiohttp
(`evaluations/judge/sdk.py`); `--http httpx` swaps in the SDK's default httpx transport for
that client, to compare. Prints this process's CPU per question (user + system, all threads)
and the wall time; the last line is machine-readable: `mode=M http=H cpu_ms_per_ask=X wall_s=W`.

    .venv/bin/python bench/judge_in_flight.py [--mode loop] [--asks 1000] [--concurrency 128]
        [--latency-ms 200] [--http aiohttp]
"""

import argparse
import asyncio
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SERVER = """
import sys, time
sys.path.insert(0, {root!r})
from tests.support.llm_server import LLMServer
server = LLMServer(latency={latency}, record=False, model="bench-judge").start()
print(server.url, flush=True)
time.sleep(1e9)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["threads", "loop"], default="loop")
    parser.add_argument("--asks", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--http", choices=["aiohttp", "httpx"], default="aiohttp")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django

    django.setup()
    import openai

    from evaluations.judge import JudgeClient, MemoryRecorder, transport
    from sherlock.core.aio import aclose_loop_clients, loop_client
    from tests.support.judging import RELEVANCE

    if args.http == "httpx":

        def httpx_client(base_url, api_key, timeout=60):
            return loop_client(
                ("bench-httpx", base_url),
                lambda: openai.AsyncOpenAI(
                    base_url=base_url, api_key=api_key or "sk-none", timeout=timeout, max_retries=0
                ),
            )

        transport.async_openai_client = httpx_client

    code = SERVER.format(root=str(ROOT), latency=args.latency_ms / 1000)
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        judge = JudgeClient(
            base_url=url,
            model="bench-judge",
            timeout=30,
            max_retries=0,
            recorder=MemoryRecorder(),
            cache_lookup=None,
        )
        c = args.concurrency
        questions = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(args.asks + c)]

        def on_threads(items):
            with ThreadPoolExecutor(c) as pool:
                list(pool.map(lambda v: judge.ask(RELEVANCE, v), items))

        async def on_loop(items):
            slots = asyncio.Semaphore(c)

            async def one(v):
                async with slots:
                    return await judge.aask(RELEVANCE, v)

            try:
                await asyncio.gather(*(one(v) for v in items))
            finally:
                await aclose_loop_clients()

        def run(items):
            if args.mode == "threads":
                on_threads(items)
            else:
                asyncio.run(on_loop(items))

        run(questions[:c])  # warm-up: connections, imports, the schema prepared once
        cpu, wall = time.process_time(), time.perf_counter()
        run(questions[c:])
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        server.kill()
    per_ask = cpu * 1000 / args.asks
    print(
        f"{args.asks} questions, {c} in flight, L={args.latency_ms} ms, mode {args.mode}"
        f"{' (' + args.http + ')' if args.mode == 'loop' else ''}: "
        f"CPU {per_ask:.2f} ms per question, wall {wall:.2f} s; load {os.getloadavg()[0]:.1f}"
    )
    http = args.http if args.mode == "loop" else "sync-httpx"
    print(f"mode={args.mode} http={http} cpu_ms_per_ask={per_ask:.3f} wall_s={wall:.2f}")


if __name__ == "__main__":
    main()
