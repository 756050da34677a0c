"""Judge economy: what the four RAG checks cost per case.

Runs faithfulness, answer_relevance, context_precision and context_recall on 20 RAG cases
against the loopback OpenAI-compatible server (tests/support/llm_server.py), through the real judge
client (official OpenAI SDK, database recording, cache), once at 0 ms and once at 200 ms of
server latency, and prints judge calls, prompt and completion tokens per case, the client CPU
per call (CPU time of the scoring thread, which includes building prompts, the SDK request,
parsing and validating the answer, the cache look-up, and storing the JudgeCall rows the way
the run engine does, in one batch per trial) and the wall time.

Reference, measured on this kind of machine with the same kind of fake server:
RAGAS 0.4.3 spends 7 calls + 2 embedding calls and 6,942 prompt tokens per case (its newer API:
9 calls, 10,506 tokens); DeepEval 4.3.1 11 calls and 6,009 prompt tokens with reasons, about
25 ms of client CPU per call. The last line is machine-readable:
`calls_per_case=C prompt_tokens_per_case=P cpu_ms_per_call=M`.

    .venv/bin/python bench/judge_cost.py [--cases 20]
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KINDS = ["faithfulness", "answer_relevance", "context_precision", "context_recall"]
REFERENCE = {"RAGAS 0.4.3": (7, 6942), "DeepEval 4.3.1": (11, 6009)}

TOPICS = [
    ("refunds", "Refunds under $50 are approved automatically within 3 business days."),
    ("shipping", "Standard shipping takes 5 to 7 business days; express takes 2."),
    ("passwords", "Reset your password from Settings, then Security, then Reset password."),
    ("invoices", "Invoices are under Billing, History and download as PDF."),
    ("cancelling", "You can cancel any time from Billing, Plan; access lasts to period end."),
]


def make_case(i):
    topic, fact = TOPICS[i % len(TOPICS)]
    other = TOPICS[(i + 1) % len(TOPICS)][1]
    case = {
        "id": f"rag-{i}",
        "input": f"What is your policy on {topic}? (ticket {i})",
        "expected": {"output": fact},
        "contexts": [fact, other],
    }
    transcript = {
        "output": f"{fact} Our support team can help with anything else about {topic}.",
        "contexts": [fact, other, TOPICS[(i + 2) % len(TOPICS)][1]],
        "tool_calls": [],
    }
    return case, transcript


def count(pattern, text):
    return len(re.findall(pattern, text, flags=re.MULTILINE))


def responder(request):
    """Coherent answers per rubric: one verdict per numbered item the prompt holds."""
    from tests.support.llm_server import Reply

    name = request["response_format"]["json_schema"]["name"]
    prompt = request["messages"][-1]["content"]
    if name == "rag_claims":
        return Reply(
            content={
                "claims": [
                    {
                        "claim": "Refunds are approved automatically.",
                        "reason": "On topic.",
                        "relevant": "yes",
                    },
                    {
                        "claim": "Support can help with more.",
                        "reason": "Background.",
                        "relevant": "idk",
                    },
                ],
                "reason": "The answer addresses the question.",
                "noncommittal": False,
            }
        )
    if name == "rag_faithfulness":
        n = count(r"^\d+\. ", prompt.split("Claims:", 1)[1])
        return Reply(
            content={
                "verdicts": [
                    {"claim": k, "reason": "Context [1] states it.", "verdict": "supported"}
                    for k in range(1, n + 1)
                ]
            }
        )
    if name == "rag_context_precision":
        n = count(r"^\[\d+\] ", prompt)
        return Reply(
            content={
                "verdicts": [
                    {
                        "context": k,
                        "reason": "It states the policy." if k == 1 else "Other topic.",
                        "useful": k == 1,
                    }
                    for k in range(1, n + 1)
                ]
            }
        )
    if name == "rag_context_recall":
        return Reply(
            content={
                "statements": [
                    {
                        "statement": "The policy as stated.",
                        "reason": "Context [1].",
                        "attributed": True,
                    }
                ]
            }
        )
    raise ValueError(f"unexpected rubric {name}")


def setup_django(db_path):
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def measure(server, cases, latency_s):
    from django.db import transaction

    from evaluations.checks import evaluate, validate_params
    from evaluations.engine import ledger, record_judge_calls, store_judge_calls
    from evaluations.judge import JudgeClient
    from evaluations.models import JudgeCall

    server.latency = latency_s
    before_requests = server.request_count
    # The engine's recording path: a trial's judge calls are held with it and stored in one
    # batch with the trial (evaluations.engine), so that write is part of what we measure.
    judge = JudgeClient(
        base_url=server.url, api_key="sk-bench", model="bench-judge", recorder=record_judge_calls
    )
    params = {kind: validate_params(kind, {}) for kind in KINDS}
    first_call = JudgeCall.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    cpu = 0.0
    statuses = {}
    started = time.perf_counter()
    for case, transcript in cases:
        bound = judge.bind(repetition=int(case["id"].split("-")[1]) + int(latency_s * 1000))
        held = []
        token = ledger.set(held)
        for kind in KINDS:
            t0 = time.thread_time()
            verdict = evaluate(kind, params[kind], case, transcript, judge=bound)
            cpu += time.thread_time() - t0
            statuses[verdict.outcome] = statuses.get(verdict.outcome, 0) + 1
        ledger.reset(token)
        t0 = time.thread_time()
        with transaction.atomic():
            store_judge_calls(held)
        cpu += time.thread_time() - t0
    wall = time.perf_counter() - started
    calls = JudgeCall.objects.filter(pk__gt=first_call, cached=False)
    n_calls = calls.count()
    prompt = sum(calls.values_list("prompt_tokens", flat=True))
    completion = sum(calls.values_list("completion_tokens", flat=True))
    http = server.request_count - before_requests
    n = len(cases)
    return {
        "latency_ms": int(latency_s * 1000),
        "calls_per_case": n_calls / n,
        "http_requests": http,
        "prompt_tokens_per_case": prompt / n,
        "completion_tokens_per_case": completion / n,
        # CPU spent in the scoring thread, over every ask (cache hits included), per HTTP call.
        "cpu_ms_per_call": cpu * 1000 / max(n_calls, 1),
        "wall_s": wall,
        "statuses": statuses,
    }


def wake_reference(samples=15):
    """CPU of one fixed piece of work (JSON round trips of a judge answer, about the size of
    one call's parsing) run at once, and run right after a 200 ms sleep, on this machine now.

    After a thread has slept, its first work runs from cold caches (on a virtual machine, on a
    core the host may have lent out): the same instructions cost more CPU. The 200 ms figures
    above include that; this reference shows how much of it is the machine's."""
    payload = {
        "choices": [{"message": {"content": '{"verdicts": []}' * 20}}],
        "usage": {"prompt_tokens": 200, "completion_tokens": 40},
    }

    def work():
        for _ in range(40):
            json.loads(json.dumps(payload))

    work()
    cpu = {}
    for sleep in (0.0, 0.2):
        total = 0.0
        for _ in range(samples):
            time.sleep(sleep)
            t0 = time.thread_time()
            work()
            total += time.thread_time() - t0
        cpu[sleep] = total * 1000 / samples
    return cpu[0.0], cpu[0.2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        setup_django(Path(tmp) / "bench.sqlite3")
        from tests.support.llm_server import LLMServer

        cases = [make_case(i) for i in range(args.cases)]
        with LLMServer(model="bench-judge", responder=responder) as server:
            # Warm-up, not counted: the first asks of a process pay one-time costs (the SDK
            # client and its connection, lazy imports, compiled schemas) that would otherwise
            # be spread over the 80 calls measured at 0 ms. Its cache keys differ (latency 1 ms).
            measure(server, [make_case(i) for i in range(3)], 0.001)
            rows = [measure(server, cases, latency) for latency in (0.0, 0.2)]
    print(f"{args.cases} RAG cases x {len(KINDS)} checks ({', '.join(KINDS)})")
    header = f"{'latency':>8} {'calls/case':>10} {'prompt tok/case':>15} "
    header += f"{'compl tok/case':>14} {'cpu ms/call':>11} {'wall s':>7}  verdicts"
    print(header)
    for row in rows:
        print(
            f"{row['latency_ms']:>6}ms {row['calls_per_case']:>10.2f} "
            f"{row['prompt_tokens_per_case']:>15.0f} {row['completion_tokens_per_case']:>14.0f} "
            f"{row['cpu_ms_per_call']:>11.2f} {row['wall_s']:>7.2f}  {row['statuses']}"
        )
    for name, (calls, tokens) in REFERENCE.items():
        ours = rows[0]
        print(
            f"vs {name}: calls {ours['calls_per_case']:.2f}/{calls} "
            f"({ours['calls_per_case'] / calls:.2f}x), prompt tokens "
            f"{ours['prompt_tokens_per_case']:.0f}/{tokens} "
            f"({ours['prompt_tokens_per_case'] / tokens:.2f}x)"
        )
    warm, woken = wake_reference()
    print(
        f"machine reference: a fixed piece of work costs {warm:.2f} ms of CPU at once, "
        f"{woken:.2f} ms right after a 200 ms sleep ({woken / warm:.2f}x)"
    )
    worst_cpu = max(row["cpu_ms_per_call"] for row in rows)
    print(
        f"calls_per_case={rows[0]['calls_per_case']:.2f} "
        f"prompt_tokens_per_case={rows[0]['prompt_tokens_per_case']:.0f} "
        f"cpu_ms_per_call={worst_cpu:.2f}"
    )


if __name__ == "__main__":
    main()
