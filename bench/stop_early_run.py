"""Stopping early, end to end: judge calls a real run saves, against the same run in full.

On a fresh SQLite database in a temporary directory, an agent answers 300 cases, each judged by
one model check (`custom`) that asks the loopback OpenAI-compatible judge
(tests/support/llm_server.py, `--latency` seconds an answer, through the official OpenAI SDK);
the judge passes an answer that says it is good. A publishing policy gates the case pass rate
at 0.9 on its 95 % interval. Per scenario (the share of good answers: a clear win 0.97, a
clear loss 0.75, a close call 0.92), one run of every case and `--seeds` runs that stop early
(each its own seed), all through the engine's shards on its event loop (8 calls in flight),
the gates read every `SHERLOCK_STOP_EARLY_SECONDS` (1) and at each shard's end. It prints the
judge calls each sent, the share saved, and the verdicts. The decision's error rate is
`bench/sequential_gate.py`'s (10,000 simulated runs a scenario); this measures what the engine
makes of the rule: the calls in flight when it stops, a shard's granularity. The last line is
machine-readable: `win_saved=… loss_saved=… close_saved=…`.

    .venv/bin/python bench/stop_early_run.py [--cases 300] [--seeds 3] [--latency 0.2]
"""

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCENARIOS = {"win": 0.97, "loss": 0.75, "close": 0.92}
CHECK = {
    "label": "Good",
    "kind": "custom",
    "threshold": 0.5,
    "params": {"criterion": "The answer says it is good.", "anchors": "0 = bad, 1 = good"},
}


RUN = [0]  # the run being made: in every answer, so no run is answered from the judge's cache


def answer(case, **_):
    """The agent: a good or a bad answer, as the case's input says."""
    word = "good" if case["input"]["good"] else "bad"
    n = case["input"]["n"]
    return {"output": f"This answer is {word}. (run {RUN[0]}, case {n})", "cost_usd": 0.001}


def judge(request):
    """The judge: a score of 1 for an answer that says it is good, 0 otherwise."""
    from tests.support.llm_server import Reply

    prompt = request["messages"][-1]["content"]
    good = "This answer is good." in prompt
    quote = "This answer is good." if good else "This answer is bad."
    return Reply(content={"quotes": [quote], "reason": "As it says.", "score": int(good)})


def setup(db_path, server):
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    os.environ["SHERLOCK_JUDGE_BASE_URL"] = server.url
    os.environ["SHERLOCK_JUDGE_MODEL"] = "bench-judge"
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    os.environ["SHERLOCK_JUDGE_FREE"] = "1"  # a judge of the team's own: no price to miss
    os.environ["SHERLOCK_AGENT_CALLABLES"] = "bench.stop_early_run.answer"
    os.environ["SHERLOCK_STOP_EARLY_SECONDS"] = "1"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def world(cases):
    """A Builder, the agent with one version per scenario and a frozen dataset per scenario."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from agents.models import Agent, AgentVersion
    from evaluations.models import Case, CaseVersion, Check, Dataset, DatasetVersion
    from governance.models import PublishingPolicy

    user = get_user_model().objects.create_superuser("bench", "bench@example.com", "x")
    agent = Agent.objects.create(slug="bench-bot", name="Bench bot")
    version = AgentVersion.objects.create(
        agent=agent, number=1, adapter="python", config={"callable": "bench.stop_early_run.answer"}
    )
    PublishingPolicy.objects.create(
        name="Interval",
        agent=agent,
        min_case_pass_rate=0.9,
        case_pass_rate_decides_on="interval",
        min_useful_progress=None,
        min_tool_effect_integrity=None,
        created_by=user,
    )
    datasets = {}
    for n, (name, rate) in enumerate(SCENARIOS.items()):
        dataset = Dataset.objects.create(slug=f"bench-{name}", name=name)
        dataset_version = DatasetVersion.objects.create(dataset=dataset, number=1)
        check = Check(dataset_version=dataset_version, position=0, **CHECK)
        check.clean()
        check.save()
        draw = random.Random(n)
        for i in range(cases):
            case = Case.objects.create(dataset=dataset, key=f"c{i:04d}")
            good = draw.random() < rate
            CaseVersion.objects.create(
                dataset_version=dataset_version, case=case, input={"good": good, "n": i}
            )
        DatasetVersion.objects.filter(pk=dataset_version.pk).update(frozen_at=timezone.now())
        datasets[name] = dataset_version
    return user, version, datasets


def one_run(user, version, dataset_version, server, **options):
    """(judge calls, cases run, outcome, seconds) of one run through the engine's shards, taken
    in order by one worker as django-q2 would hand them out."""
    from django.conf import settings
    from django_q.conf import Conf

    from evaluations.actions.start_run import StartRun
    from evaluations.engine import run_shard
    from evaluations.models import Trial
    from evaluations.verdict import run_verdict

    Conf.SYNC = False  # nothing runs on commit: the shards run below
    import bench.stop_early_run as agent  # the module the engine imports the agent from

    agent.RUN[0] += 1
    run = StartRun(
        acting_user=user, agent_version=version, dataset_version=dataset_version, **options
    ).execute()
    before, started = server.request_count, time.perf_counter()
    ids = list(Trial.objects.filter(run=run).order_by("pk").values_list("pk", flat=True))
    size = settings.SHERLOCK_SHARD_SIZE
    for start in range(0, len(ids), size):
        run_shard(run.pk, ids[start : start + size])
    elapsed = time.perf_counter() - started
    run.refresh_from_db()
    ran = Trial.objects.filter(run=run).exclude(status="cancelled").count()
    return server.request_count - before, ran, run_verdict(run).outcome, elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    from tests.support.llm_server import LLMServer

    server = LLMServer(latency=args.latency, responder=judge, record=False).start()
    with tempfile.TemporaryDirectory() as tmp:
        setup(Path(tmp) / "bench.sqlite3", server)
        user, version, datasets = world(args.cases)
        print(
            f"{args.cases} cases, one model check, judge latency {args.latency * 1000:.0f} ms, "
            f"policy: case pass rate 0.9 on its 95 % interval; {args.seeds} seeds a scenario"
        )
        print(f"{'scenario':<8} {'run':<12} {'calls':>6} {'cases':>6} {'outcome':<13} {'s':>6}")
        saved = {}
        for name, dataset_version in datasets.items():
            full, _, outcome, took = one_run(user, version, dataset_version, server)
            print(f"{name:<8} {'full':<12} {full:>6} {args.cases:>6} {outcome:<13} {took:>6.1f}")
            calls = []
            for seed in range(1, args.seeds + 1):
                used, ran, outcome, took = one_run(
                    user, version, dataset_version, server, stop_early=True, seed=seed
                )
                calls.append(used)
                print(
                    f"{name:<8} {f'seed {seed}':<12} {used:>6} {ran:>6} {outcome:<13} {took:>6.1f}"
                )
            saved[name] = 1 - sum(calls) / len(calls) / full
            print(f"{name:<8} saved {saved[name]:.1%} of the full run's judge calls")
    server.stop()
    print(" ".join(f"{name}_saved={value:.3f}" for name, value in saved.items()))


if __name__ == "__main__":
    main()
