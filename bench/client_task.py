"""One client run of `bench/client_run.py`, in a process of its own so that the client's code
can be another checkout's (`PYTHONPATH=<that checkout>/client`): a team's task that takes
`--latency-ms` and answers either a short text or a realistic RAG transcript (a 15 KB answer
with its retrieved contexts; the first `--large` cases answer 1 to 5 MB), run through
`sherlock_client.evaluate`. Prints one JSON line: the wall time from the call to its Result,
the outcome and what the client did.

    PYTHONPATH=client:. python bench/client_task.py --url URL --key KEY --version NAME
"""

import argparse
import json
import os
import time

OUTPUT = "Thank you for asking. Your refund was approved and will arrive within 3 days."
LARGE_MB = (1, 3, 5)


def rag_answer(reference: str, index: int, large: int) -> dict:
    """About 15 KB: an answer citing four retrieved passages of about 3 KB each; the first
    `large` cases answer 1, 3 or 5 MB (a model that dumped a whole document)."""
    passage = (
        "Refunds are issued to the original payment method within three business days of "
        "approval; store credit is immediate. Orders over 90 days old need a manager. "
    ) * 20
    contexts = [f"[doc {n}] {passage}" for n in range(4)]
    text = f"{OUTPUT} (ref {reference}) " + "See the policy: " + passage[:2000]
    if index < large:
        size = LARGE_MB[index % len(LARGE_MB)] * 1024 * 1024
        text = (text + " ") * (size // len(text) + 1)
        text = text[:size]
    return {"output": text, "contexts": contexts, "cost_usd": 0.0001}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--payload", choices=["short", "rag"], default="short")
    parser.add_argument("--large", type=int, default=0)
    args = parser.parse_args()
    from sherlock_client import evaluate

    latency = args.latency_ms / 1000
    tag = args.version
    order = {}

    def task(input, context):
        time.sleep(latency)
        reference = f"{tag} {context['id']} {context['repetition']}"
        if args.payload == "short":
            return {"output": f"{OUTPUT} (ref {reference})", "cost_usd": 0.0001}
        index = order.setdefault(context["id"], len(order))
        return rag_answer(reference, index, args.large)

    started = time.perf_counter()
    result = evaluate(
        task,
        agent="bench-bot",
        dataset="bench",
        version=args.version,
        repetitions=args.reps,
        concurrency=args.concurrency,
        url=args.url,
        api_key=args.key,
    )
    wall = time.perf_counter() - started
    stats = result.stats
    print(
        json.dumps(
            {
                "wall_s": wall,
                "outcome": result.outcome,
                "called": stats.called,
                "accepted": stats.accepted,
                "invalid": stats.invalid,
                "batches": stats.batches,
                "upload_s": stats.upload_seconds,
                "calls_s": stats.wall_seconds,
                "client": os.path.dirname(__import__("sherlock_client").__file__),
            }
        )
    )


if __name__ == "__main__":
    main()
