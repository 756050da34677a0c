"""A real judge: every model check kind and the `openai_chat` adapter against a running server.

Run by bench/real_judge.sh (`make real-judge`), which builds llama.cpp's `llama-server`, starts
it on loopback with a small real model and sets `SHERLOCK_JUDGE_BASE_URL` and
`SHERLOCK_JUDGE_MODEL`; it works against any OpenAI-compatible server those two name
(docs/judges.md). Not part of the test suite: it needs a model server, and takes minutes.

What it does, on a fresh SQLite database in a temporary directory:

1. `seed_demo` (users, the demo agents and their tools);
2. a dataset of the first `--cases` demo questions (support-basics) with their reference
   answers, and one check of every model kind (faithfulness, answer_relevance,
   context_precision, context_recall, completeness, safety, analysis_quality, custom);
3. one run of `support-bot` v1 through the engine, in this process (as `seed_demo` runs its
   demo runs): every model check asks the real judge;
4. an `openai_chat` version on the same server with one tool (`kb.search`, served by
   `kb_search` below), called on the same questions.

It prints, per kind, how many results were scored and the error and skip reasons with their
counts, then the adapter's finish reasons, tool calls and transcript warnings. The last line is
machine-readable: `scored=S results=N`.

    SHERLOCK_JUDGE_BASE_URL=http://127.0.0.1:8089/v1 SHERLOCK_JUDGE_MODEL=gemma-3-270m \\
        .venv/bin/python bench/real_judge.py [--cases 3]
"""

import argparse
import io
import os
import re
import sys
import tempfile
import time
import urllib.parse
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODEL_KINDS = [
    ("faithfulness", {}),
    ("answer_relevance", {}),
    ("context_precision", {}),
    ("context_recall", {}),
    ("completeness", {}),
    ("safety", {}),
    ("analysis_quality", {}),
    (
        "custom",
        {
            "label": "Polite and on topic",
            "criterion": "The answer is polite and answers the customer's question.",
        },
    ),
]


def kb_search(arguments):
    """The `kb.search` tool of the adapter run: the demo knowledge base, looked up by topic."""
    from agents import demo

    query = str((arguments or {}).get("query", "")).lower()
    hits = [text for topic, text in demo.KNOWLEDGE.items() if topic in query]
    return hits or ["No article matches; try one word such as refund or shipping."]


def setup_django(db_path):
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    os.environ.pop("REDIS_URL", None)
    # The adapter's tool executor is `bench.real_judge.kb_search`: allow it next to the demo's.
    os.environ["SHERLOCK_AGENT_CALLABLES"] = "agents.demo.,bench.real_judge.kb_search"
    # The agent under test is the judge's own server (llama.cpp on this machine, usually): the
    # operator allows its host, as SHERLOCK_AGENT_HOSTS' default admits public addresses only.
    judge_host = urllib.parse.urlsplit(os.environ.get("SHERLOCK_JUDGE_BASE_URL", "")).hostname
    os.environ.setdefault("SHERLOCK_AGENT_HOSTS", ",".join(["*", *filter(None, [judge_host])]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    call_command("seed_demo", stdout=io.StringIO())


def build_dataset(editor, count):
    from agents import demo
    from governance.management.commands.seed_demo import CASES, frozen_dataset

    cases = []
    for key, question, tools in CASES[:count]:
        text = question["question"] if isinstance(question, dict) else question
        topic = demo.topic_of(text)
        cases.append(
            {
                "key": key,
                "input": question,
                "expected": {"output": demo.KNOWLEDGE.get(topic, "Connect the customer.")},
                "expected_tools": tools,
            }
        )
    checks = [
        {
            "label": kind,
            "kind": kind,
            "params": params,
            "threshold": 0.5,
            "mode": "informative",
        }
        for kind, params in MODEL_KINDS
    ]
    return frozen_dataset(
        editor,
        slug="real-judge",
        name="Real judge",
        description="Every model check kind on the demo questions (bench/real_judge.py).",
        note="bench/real_judge.py",
        checks=checks,
        cases=cases,
    )


def short(reason):
    """A reason with its figures taken out, so that equal causes count together."""
    reason = re.sub(r"\d+(\.\d+)?", "N", reason or "(none)")
    return reason if len(reason) <= 140 else reason[:137] + "..."


def run_checks(users, count):
    from agents.models import Agent
    from evaluations import engine
    from evaluations.actions.start_run import StartRun
    from evaluations.models import CheckResult

    version = Agent.objects.get(slug="support-bot").versions.order_by("number").first()
    dataset_version = build_dataset(users["editor"], count)
    run = StartRun(
        acting_user=users["builder"],
        agent_version=version,
        dataset_version=dataset_version,
        repetitions=1,
    ).execute()
    started = time.perf_counter()
    engine.run_shard(run.pk, list(run.trials.values_list("pk", flat=True)))
    elapsed = time.perf_counter() - started
    by_kind = defaultdict(list)
    results = CheckResult.objects.filter(trial__run=run).select_related("check_config")
    for result in results:
        by_kind[result.check_config.kind].append(result)
    print(f"run #{run.pk}: {count} cases x {len(MODEL_KINDS)} model kinds in {elapsed:.0f} s")
    scored_total = total = 0
    for kind, _ in MODEL_KINDS:
        rows = by_kind.get(kind, [])
        scored = [r for r in rows if r.status in ("passed", "failed", "scored")]
        scored_total += len(scored)
        total += len(rows)
        print(f"  {kind:<18} scored {len(scored)}/{len(rows)}")
        for status in ("error", "skipped"):
            reasons = Counter(short(r.reason) for r in rows if r.status == status)
            for reason, n in reasons.most_common():
                print(f"      {status} x{n}: {reason}")
    return scored_total, total


def run_adapter(users, count):
    from django.conf import settings

    from agents.actions.create_draft_version import CreateDraftVersion
    from agents.adapters import AgentCallError, call_agent
    from agents.models import Agent, Tool
    from governance.management.commands.seed_demo import CASES

    version = CreateDraftVersion(
        acting_user=users["builder"],
        agent=Agent.objects.get(slug="support-bot"),
        adapter="openai_chat",
        config={
            "base_url": settings.SHERLOCK_JUDGE_BASE_URL,
            "model": settings.SHERLOCK_JUDGE_MODEL,
            "system_prompt": "You are a support assistant. Use kb.search to find answers.",
            "temperature": 0,
            "max_tokens": 128,
            "max_turns": 3,
            "timeout": 300,
            "tools": {"kb.search": {"callable": "bench.real_judge.kb_search"}},
        },
        notes="bench/real_judge.py: openai_chat on the judge's server",
        tools=[Tool.objects.get(name="kb.search")],
    ).execute()
    print(f"openai_chat adapter, one tool (kb.search), model {settings.SHERLOCK_JUDGE_MODEL}:")
    for key, question, _ in CASES[:count]:
        try:
            transcript = call_agent(version, {"input": question})
        except AgentCallError as exc:
            print(f"  {key:<18} error: {exc}")
            continue
        finishes = ",".join(str(f) for f in transcript.get("finish_reasons", []))
        print(
            f"  {key:<18} finish_reason {finishes or '?'}, "
            f"{len(transcript.get('tool_calls') or [])} tool calls, "
            f"{transcript.get('turns')} turns, {transcript['latency_ms'] / 1000:.1f} s"
        )
        output = str(transcript.get("output") or "")
        print(f"      output: {output[:70]!r}{'...' if len(output) > 70 else ''}")
        for warning in transcript.get("warnings", []):
            print(f"      warning: {warning}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=3, help="demo questions to use (1-12)")
    args = parser.parse_args()
    if not os.environ.get("SHERLOCK_JUDGE_BASE_URL"):
        parser.error("set SHERLOCK_JUDGE_BASE_URL (and SHERLOCK_JUDGE_MODEL) to the server")
    with tempfile.TemporaryDirectory(prefix="sherlock-real-judge-") as tmp:
        setup_django(Path(tmp) / "db.sqlite3")
        from django.conf import settings
        from django.contrib.auth import get_user_model

        users = {u.username: u for u in get_user_model().objects.all()}
        print(
            f"judge {settings.SHERLOCK_JUDGE_MODEL} at {settings.SHERLOCK_JUDGE_BASE_URL}, "
            f"timeout {settings.SHERLOCK_JUDGE_TIMEOUT} s"
        )
        scored, total = run_checks(users, args.cases)
        run_adapter(users, args.cases)
        print(f"scored={scored} results={total}")


if __name__ == "__main__":
    main()
