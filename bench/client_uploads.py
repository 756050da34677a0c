"""The server's side of a client run (docs/client.md): uploads and scoring, alone.

On a fresh SQLite database (a temp file, migrated), a `client` run of N cases x k repetitions
with m heuristic checks: the work list read in pages of 500, the N x k transcripts uploaded
in batches of 500 through the API's whole stack (API key authentication, the bounded JSON
parser, `UploadTranscripts`; Django's test client, so no socket: this is the server's cost),
then `finish/`, whose scoring runs in this process (django-q2's sync mode) on the engine's
event loop. Reference in the same run: the same transcripts scored as a `replay` run, the
engine's own path for recorded transcripts. Printed: transcripts uploaded per second, the
scoring time, and its ratio to the replay run's (about 1: the uploads are scored by the same
engine). `bench/client_run.py` (the client's end-to-end figure) subtracts nothing of this; it
is the "server's scoring time measured alone" of its ideal bound.

    .venv/bin/python bench/client_uploads.py [--cases 500] [--repetitions 3]

The last line is machine-readable: ``upload_per_s=U scoring_s=S replay_s=R ratio=Q``.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BATCH = 500
CHECKS = [
    {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0},
    {"label": "Latency", "kind": "latency", "params": {"max_ms": 1000}, "threshold": 1.0},
    {"label": "Tools", "kind": "tools_used", "params": {"match": "any_order"}, "threshold": 1.0},
    {"label": "Guard", "kind": "tools_used", "params": {"tools": ["kb.search"]}, "threshold": 1.0},
]


def setup_django(db_path):
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    os.environ["SHERLOCK_Q_SYNC"] = "1"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sherlock.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def transcript(i, repetition):
    return {
        "output": f"Order {i} is refunded (try {repetition}).",
        "tool_calls": [{"name": "kb.search", "arguments": {"q": f"order {i}"}}],
        "latency_ms": 150 + (i * 7 + repetition) % 100,
        "usage": {"prompt_tokens": 120, "completion_tokens": 30},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    n, k = args.cases, args.repetitions
    with tempfile.TemporaryDirectory() as tmp:
        setup_django(Path(tmp) / "bench.sqlite3")
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Group
        from rest_framework.test import APIClient

        from agents.models import Agent, AgentVersion
        from evaluations.actions.start_run import StartRun
        from evaluations.models import Case, CaseVersion, Check, Dataset, DatasetVersion, Run
        from governance.models import APIKey, RoleGrant

        user = get_user_model().objects.create_user("builder", password="x", is_staff=True)
        RoleGrant.objects.create(user=user, role="Builder", scope="global", reason="bench")
        user.groups.add(Group.objects.get(name="Builder"))
        from datetime import timedelta

        from django.utils import timezone

        expiry = timezone.now() + timedelta(days=1)
        _, secret = APIKey.objects.create_key(user=user, name="bench", expiry_date=expiry)
        agent = Agent.objects.create(slug="bot", name="Bot")
        dataset = Dataset.objects.create(slug="refunds", name="Refunds")
        version = DatasetVersion.objects.create(dataset=dataset, number=1)
        for position, fields in enumerate(CHECKS):
            check = Check(dataset_version=version, position=position, **fields)
            check.clean()
            check.save()
        for i in range(n):
            case = Case.objects.create(dataset=dataset, key=f"case-{i:05d}")
            CaseVersion.objects.create(
                dataset_version=version,
                case=case,
                input=f"Refund order {i}",
                expected_tools=[{"name": "kb.search"}],
            )
        version.frozen_at = timezone.now()
        version.save(update_fields=["frozen_at"])
        AgentVersion.objects.create(
            agent=agent, number=1, name="bench", adapter="client", config={}
        )

        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
        started = api.post(
            "/api/v1/runs/client/",
            {"agent": "bot", "version": "bench", "dataset": "refunds", "repetitions": k},
            format="json",
        ).json()
        run_id = started["id"]
        t0 = time.perf_counter()
        work, url = [], f"/api/v1/runs/{run_id}/work/?page_size={BATCH}"
        while url:
            page = api.get(url).json()
            work.extend(page["results"])
            url = page["next"]
        listed = time.perf_counter() - t0
        index = {item["key"]: int(item["case"].split("-")[1]) for item in work}
        items = [
            {"key": item["key"], "transcript": transcript(index[item["key"]], item["repetition"])}
            for item in work
        ]
        t0 = time.perf_counter()
        for start in range(0, len(items), BATCH):
            answer = api.post(
                f"/api/v1/runs/{run_id}/transcripts/",
                {"items": items[start : start + BATCH]},
                format="json",
            )
            assert answer.status_code == 200, answer.json()
        uploaded = time.perf_counter() - t0
        t0 = time.perf_counter()
        finished = api.post(f"/api/v1/runs/{run_id}/finish/")
        scoring = time.perf_counter() - t0
        assert finished.status_code == 202, finished.json()
        run = Run.objects.get(pk=run_id)
        assert run.status == "completed" and run.trials_done == n * k, run.status

        recorded = {}
        for item in work:
            recorded.setdefault(item["case"], {})[item["repetition"]] = transcript(
                index[item["key"]], item["repetition"]
            )
        replay = AgentVersion.objects.create(
            agent=agent,
            number=2,
            adapter="replay",
            config={
                "transcripts": {
                    key: [reps[r] for r in sorted(reps)] for key, reps in recorded.items()
                }
            },
        )
        t0 = time.perf_counter()
        replayed = StartRun(  # commits; the sync broker runs its shards here, on the loop
            acting_user=user, agent_version=replay, dataset_version=version, repetitions=k
        ).execute()
        replay_s = time.perf_counter() - t0
        replayed.refresh_from_db()
        assert replayed.status == "completed", replayed.status

        total = n * k
        print(
            f"client run: {n} cases x {k} repetitions = {total} transcripts, {len(CHECKS)} checks"
        )
        print(f"work list: {listed:.2f} s ({total / listed:.0f} items/s)")
        print(
            f"uploads: {uploaded:.2f} s in batches of {BATCH} "
            f"({total / uploaded:.0f} transcripts/s)"
        )
        print(
            f"finish and scoring: {scoring:.2f} s; "
            f"the same transcripts as a replay run: {replay_s:.2f} s"
        )
        print(
            f"upload_per_s={total / uploaded:.0f} scoring_s={scoring:.2f} "
            f"replay_s={replay_s:.2f} ratio={scoring / replay_s:.3f}"
        )


if __name__ == "__main__":
    main()
