"""Client runs over real HTTP (docs/client.md): a real server process, API keys, httpx.

The `sherlock` client's side of the contract, as the server answers it: start a run of a
`client` version, list its work, upload transcripts and errors (idempotent, atomic), finish it,
and the scores are those of the same transcripts replayed through the engine.
"""

import httpx2 as httpx
import pytest

from agents.models import AgentVersion
from evaluations.actions.start_run import StartRun
from evaluations.choices import CheckStatus, RunStatus, TrialStatus
from evaluations.models import CheckResult, Run, Trial
from governance.models import AuditEntry
from tests.support import factories
from tests.support.api_server import api_server
from tests.support.governance import api_key

# Committed rows the server process reads; `live_db` lets the append-only audit log be flushed
# after each test (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("live_db")

CHECKS = [
    {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0},
    {"label": "Latency", "kind": "latency", "params": {"max_ms": 1000}, "threshold": 1.0},
    {"label": "Tools", "kind": "tools_used", "params": {"match": "any_order"}, "threshold": 1.0},
]
CASES = [
    ("refund", "Refund my order", {"expected_tools": [{"name": "orders.lookup"}]}),
    ("greet", "Hello", {"expected": {"output": "Hi"}, "tags": ["smalltalk"]}),
    ("ship", "Where is my parcel?", {"expected_tools": [{"name": "orders.lookup"}]}),
]


def answer(case_key, repetition):
    """What the team's function answers: varied, so checks pass and fail."""
    if case_key == "refund":
        return {
            "output": "Refunded.",
            "tool_calls": [{"name": "orders.lookup", "arguments": {"id": 1}}],
            "latency_ms": 120 * repetition,
        }
    if case_key == "greet":
        return {"output": "Hi there", "tool_calls": [], "latency_ms": 40}
    return {"output": {"not": "text"}, "tool_calls": [], "latency_ms": 5000}


@pytest.fixture
def world(live_db):
    builder = factories.user("builder", role="Builder")
    agent = factories.agent("support-bot")
    dataset = factories.dataset("support-basics")
    frozen = factories.dataset_version(dataset, cases=CASES, checks=CHECKS)
    return {"builder": builder, "agent": agent, "dataset": dataset, "frozen": frozen}


@pytest.fixture
def server(live_db, tmp_path):
    with api_server(tmp_path / "server.log") as url:
        yield url


@pytest.fixture
def http(server):
    clients = []

    def make(user):
        _, secret = api_key(user)
        client = httpx.Client(
            base_url=f"{server}/api/v1",
            headers={"Authorization": f"Token {secret}"},
            timeout=30,
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def ensure_version(client, name="abc123", config=None):
    body = {"agent": "support-bot", "name": name, "adapter": "client", "config": config or {}}
    return client.post("/versions/ensure/", json=body)


def start(client, **extra):
    body = {"agent": "support-bot", "version": "abc123", "dataset": "support-basics", **extra}
    return client.post("/runs/client/", json=body)


def all_work(client, url):
    items = []
    while url:
        page = client.get(url).json()
        items.extend(page["results"])
        url = page["next"]
    return items


def items_for(work):
    return [
        {"key": item["key"], "transcript": answer(item["case"], item["repetition"])}
        for item in work
    ]


def test_builder_runs_a_client_version_end_to_end(world, http):
    client = http(world["builder"])
    created = ensure_version(client, config={"entrypoint": "bot.main:answer"})
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "abc123" and created.json()["adapter"] == "client"
    again = ensure_version(client, config={"entrypoint": "bot.main:answer"})
    assert again.status_code == 200 and again.json()["id"] == created.json()["id"]

    metadata = {
        "git_commit": "abc123",
        "git_branch": "main",
        "git_repository": "https://github.com/acme/bot",
        "ci_provider": "github",
        "ci_job_url": "https://github.com/acme/bot/actions/runs/7",
        "ci_run_id": "7",
        "pull_request": "12",
        "config": {"temperature": 0},
    }
    started = start(client, repetitions=2, metadata=metadata)
    assert started.status_code == 201, started.text
    run = started.json()
    assert run["status"] == "waiting" and run["repetitions"] == 2
    assert run["dataset_version"] == world["frozen"].pk
    assert run["url"].endswith(f"/runs/{run['id']}/") and run["url"].startswith("http://")
    assert Run.objects.get(pk=run["id"]).source == metadata

    work = all_work(client, run["work_url"])
    assert len(work) == 6
    by_key = {item["key"]: item for item in work}
    greet = next(item for item in work if item["case"] == "greet" and item["repetition"] == 1)
    assert greet["key"] == f"{greet['case_version']}:1"
    assert greet["context"]["input"] == "Hello" and greet["context"]["tags"] == ["smalltalk"]
    assert "expected" not in greet["context"]  # the answer key stays with Sherlock

    first = client.post(run["upload_url"], json={"items": items_for(work[:4])})
    assert first.json() == {"accepted": 4, "duplicates": 0, "remaining": 2}
    # Scored as soon as they are stored, while the client's calls go on: the run still waits.
    statuses = dict(Trial.objects.filter(run_id=run["id"]).values_list("pk", "status"))
    early = {_trial(run, item).pk for item in work[:4]}
    assert {statuses[pk] for pk in early} == {TrialStatus.COMPLETED}
    assert {s for pk, s in statuses.items() if pk not in early} == {TrialStatus.PENDING}
    assert Run.objects.get(pk=run["id"]).status == RunStatus.WAITING
    assert CheckResult.objects.filter(trial_id__in=early).count() == 4 * len(CHECKS)
    # A retried batch (the answer was lost) doubles nothing, whatever it holds now.
    retried = [{"key": work[0]["key"], "transcript": {"output": "changed"}}]
    again = client.post(run["upload_url"], json={"items": retried + items_for(work[4:])})
    assert again.json() == {"accepted": 2, "duplicates": 1, "remaining": 0}
    assert len(all_work(client, run["work_url"])) == 0
    assert len(all_work(client, run["work_url"] + "?all=1")) == 6
    assert Trial.objects.get(pk=_trial(run, work[0]).pk).transcript != {"output": "changed"}

    finished = client.post(run["finish_url"])
    assert finished.status_code == 202, finished.text
    stored = Run.objects.get(pk=run["id"])
    assert stored.status == RunStatus.COMPLETED and stored.trials_done == 6
    assert stored.trials_error == 0
    refund = _trial(run, next(i for i in by_key.values() if i["case"] == "refund"))
    assert refund.status == TrialStatus.COMPLETED and refund.latency_ms in (120, 240)
    # Finishing again answers its state.
    twice = client.post(run["finish_url"])
    assert twice.status_code == 200 and twice.json()["status"] == "completed"
    late = client.post(run["upload_url"], json={"items": items_for(work[:1])})
    assert late.status_code == 409 and late.json()["code"] == "run_closed"
    codes = set(AuditEntry.objects.values_list("action", flat=True))
    assert {"evaluations.run.start", "evaluations.run.upload", "evaluations.run.finish"} <= codes


def _trial(run, item):
    case_version, repetition = item["key"].split(":")
    return Trial.objects.get(
        run_id=run["id"], case_version_id=int(case_version), repetition=int(repetition)
    )


def test_a_bad_item_refuses_the_whole_batch_naming_it(world, http):
    client = http(world["builder"])
    ensure_version(client)
    run = start(client).json()
    work = all_work(client, run["work_url"])
    items = items_for(work)
    items[2] = {"key": work[2]["key"], "transcript": {"output": "x", "latency_ms": "fast"}}
    refused = client.post(run["upload_url"], json={"items": items})
    assert refused.status_code == 400
    assert refused.json()["field"] == "items[2].transcript.latency_ms"
    assert not Trial.objects.filter(run_id=run["id"], uploaded_at__isnull=False).exists()

    bad_calls = [{"key": work[0]["key"], "transcript": {"tool_calls": "orders.lookup"}}]
    refused = client.post(run["upload_url"], json={"items": bad_calls})
    assert (
        refused.status_code == 400 and refused.json()["field"] == "items[0].transcript.tool_calls"
    )
    unknown = client.post(run["upload_url"], json={"items": [{"key": "999999:1", "error": {}}]})
    assert unknown.status_code == 400 and unknown.json()["field"] == "items[0].error.kind"
    unknown = client.post(
        run["upload_url"], json={"items": [{"key": "999999:1", "transcript": {"output": "x"}}]}
    )
    assert unknown.status_code == 400 and unknown.json()["code"] == "unknown_key"
    both = [{"key": work[0]["key"], "transcript": {}, "error": {"kind": "raised"}}]
    assert client.post(run["upload_url"], json={"items": both}).status_code == 400
    too_many = {"items": [{"key": work[0]["key"], "transcript": {}}] * 501}
    refused = client.post(run["upload_url"], json=too_many)
    assert refused.status_code == 400 and refused.json()["code"] == "too_many"
    assert not Trial.objects.filter(run_id=run["id"], uploaded_at__isnull=False).exists()


def test_one_upload_limit_said_truly_and_a_batch_over_django_s_default_is_taken(
    world, http, settings
):
    """The run tells the client its limits; a 3 MB batch (over Django's default 2.5 MB read
    limit) is stored; a body over the API's limit answers 413 naming that limit."""
    client = http(world["builder"])
    ensure_version(client)
    run = start(client).json()
    assert run["limits"] == {
        "body_bytes": settings.SHERLOCK_API_MAX_BODY_BYTES,
        "item_bytes": settings.SHERLOCK_UPLOAD_ITEM_MAX_BYTES,
        "items": 500,
    }
    work = all_work(client, run["work_url"])
    items = [
        {
            "key": item["key"],
            "transcript": {**answer(item["case"], 1), "contexts": ["c" * 1_000_000]},
        }
        for item in work[:4]
    ]
    stored = client.post(run["upload_url"], json={"items": items})
    assert stored.status_code == 200, stored.text
    assert stored.json()["accepted"] == len(items) == 3  # 3 MB
    huge = client.post(run["upload_url"], json={"items": [], "pad": "x" * 11_000_000})
    assert huge.status_code == 413
    assert "10485760 bytes (SHERLOCK_API_MAX_BODY_BYTES)" in huge.json()["detail"]


def test_errors_and_never_uploaded_items_are_agent_errors(world, http):
    client = http(world["builder"])
    ensure_version(client)
    run = start(client).json()
    work = all_work(client, run["work_url"])
    raised = {"key": work[0]["key"], "error": {"kind": "raised", "message": "KeyError: 'x'"}}
    timeout = {"key": work[1]["key"], "error": {"kind": "timeout", "message": "after 30 s"}}
    assert client.post(run["upload_url"], json={"items": [raised, timeout]}).json() == {
        "accepted": 2,
        "duplicates": 0,
        "remaining": 1,
    }
    finished = client.post(run["finish_url"])
    assert finished.status_code == 202 and finished.json()["never_returned"] == 1
    stored = Run.objects.get(pk=run["id"])
    assert stored.status == RunStatus.COMPLETED
    assert stored.trials_done == 3 and stored.trials_error == 3
    errors = {t.case_version_id: t.error for t in Trial.objects.filter(run_id=run["id"])}
    assert errors[work[0]["case_version"]] == "the function raised on the client: KeyError: 'x'"
    assert errors[work[1]["case_version"]].startswith("the function timed out on the client")
    assert errors[work[2]["case_version"]] == "never returned by the client"
    results = CheckResult.objects.filter(trial__run_id=run["id"])
    assert results.count() == 9 and {r.status for r in results} == {CheckStatus.ERROR}


def test_scores_are_those_of_the_same_transcripts_replayed_by_the_engine(
    world, http, django_capture_on_commit_callbacks
):
    client = http(world["builder"])
    ensure_version(client)
    run = start(client, repetitions=2).json()
    work = all_work(client, run["work_url"])
    client.post(run["upload_url"], json={"items": items_for(work)})
    assert client.post(run["finish_url"]).status_code == 202

    recorded = {}
    for item in work:
        recorded.setdefault(item["case"], []).append(answer(item["case"], item["repetition"]))
    replay = AgentVersion.objects.create(
        agent=world["agent"], number=9, adapter="replay", config={"transcripts": recorded}
    )
    replayed = factories.start_run(
        world["builder"], replay, world["frozen"], django_capture_on_commit_callbacks, reps=2
    )
    assert replayed.status == RunStatus.COMPLETED

    def scores(run_id):
        return sorted(
            CheckResult.objects.filter(trial__run_id=run_id).values_list(
                "trial__case__key",
                "trial__repetition",
                "check_config__label",
                "status",
                "score",
                "reason",
                "blocking",
            )
        )

    client_scores = scores(run["id"])
    assert client_scores == scores(replayed.pk)
    statuses = {row[3] for row in client_scores}
    assert CheckStatus.PASSED in statuses and CheckStatus.FAILED in statuses
    client_run = Run.objects.get(pk=run["id"])
    assert client_run.summary["case_pass_rate"] == replayed.summary["case_pass_rate"]


def test_role_matrix(world, http):
    editor = factories.user("editor", role="Editor")
    outsider = factories.user("outsider")
    other_builder = factories.user("builder2", role="Builder")
    builder = http(world["builder"])
    ensure_version(builder)
    run = builder.post(
        "/runs/client/",
        json={"agent": "support-bot", "version": "abc123", "dataset": "support-basics"},
    ).json()
    work = all_work(builder, run["work_url"])
    one = {"items": items_for(work[:1])}

    as_editor = http(editor)
    assert ensure_version(as_editor, name="other").status_code == 403
    assert start(as_editor).status_code == 403
    assert as_editor.post(run["upload_url"], json=one).status_code == 403
    assert as_editor.post(run["finish_url"]).status_code == 403

    as_outsider = http(outsider)
    assert start(as_outsider).status_code == 400  # the agent does not exist, for them
    assert as_outsider.get(run["work_url"]).status_code == 404
    assert as_outsider.post(run["upload_url"], json=one).status_code == 404
    assert as_outsider.post(run["finish_url"]).status_code == 404

    # Another Builder of the agent may (the role allows, not who started the run).
    as_other = http(other_builder)
    assert as_other.post(run["upload_url"], json=one).json()["accepted"] == 1
    assert (
        not Trial.objects.filter(run_id=run["id"], uploaded_at__isnull=False)
        .exclude(case_version_id=work[0]["case_version"])
        .exists()
    )
    assert Run.objects.get(pk=run["id"]).status == RunStatus.WAITING


def test_refusals_of_start(world, http):
    client = http(world["builder"])
    assert start(client).json()["field"] == "version"  # no such version yet
    python = factories.agent_version(world["agent"])
    python.name = "py"
    python.save(update_fields=["name"])
    refused = start(client, version="py")
    assert refused.status_code == 400 and refused.json()["code"] == "not_client"
    ensure_version(client)
    refused = start(client, dataset="nope")
    assert refused.status_code == 400 and refused.json()["field"] == "dataset"
    conflict = ensure_version(client, config={"entrypoint": "other.mod:fn"})
    assert conflict.status_code == 409 and conflict.json()["field"] == "config"
    assert start(client, metadata={"nope": 1}).status_code == 400
    no_gate = start(client, purpose="gate")
    assert no_gate.status_code == 409 and no_gate.json()["code"] == "no_gate_run"


def test_workers_never_take_a_waiting_client_run(world, http):
    from evaluations.engine import enqueue_run, reap, run_shard

    client = http(world["builder"])
    ensure_version(client)
    run = start(client).json()
    ids = list(Trial.objects.filter(run_id=run["id"]).values_list("pk", flat=True))
    enqueue_run(run["id"])  # django-q2 runs in-process here: a shard would run now
    assert run_shard(run["id"], ids) == 0
    reap()
    assert Run.objects.get(pk=run["id"]).status == RunStatus.WAITING
    assert set(Trial.objects.filter(run_id=run["id"]).values_list("status", flat=True)) == {
        TrialStatus.PENDING
    }


def test_a_waiting_run_expires_after_its_timeout(world, http, settings):
    from datetime import timedelta

    from django.utils import timezone

    from evaluations.engine import reap

    client = http(world["builder"])
    ensure_version(client)
    run = start(client).json()
    work = all_work(client, run["work_url"])
    client.post(run["upload_url"], json={"items": items_for(work[:1])})
    settings.SHERLOCK_CLIENT_RUN_TIMEOUT_HOURS = 2
    assert reap(now=timezone.now() + timedelta(hours=1))["client_runs_expired"] == 0
    assert reap(now=timezone.now() + timedelta(hours=3))["client_runs_expired"] == 1
    stored = Run.objects.get(pk=run["id"])
    assert stored.status == RunStatus.COMPLETED and stored.trials_error == 2
    assert AuditEntry.objects.filter(action="evaluations.run.expire").count() == 1


def test_a_run_sherlock_executes_is_no_client_run(world, http, django_capture_on_commit_callbacks):
    version = factories.agent_version(world["agent"])
    with django_capture_on_commit_callbacks(execute=False):
        run = StartRun(
            acting_user=world["builder"], agent_version=version, dataset_version=world["frozen"]
        ).execute()
    client = http(world["builder"])
    assert client.get(f"/runs/{run.pk}/work/").json()["code"] == "not_client_run"
    assert client.post(f"/runs/{run.pk}/finish/").json()["code"] == "not_client_run"
    refused = client.post(f"/runs/{run.pk}/transcripts/", json={"items": [{"key": "1:1"}]})
    assert refused.status_code == 409


def test_a_model_check_is_judged_as_in_a_run_sherlock_executed(
    world, tmp_path, llm_server, judge_settings, django_capture_on_commit_callbacks
):
    """The judge scores the client's transcripts exactly as a replay run's: same questions,
    same verdicts (the loopback judge answers each question the same way every time)."""
    import json

    from tests.support.llm_server import Reply

    def judge(request):
        # A judge that grades by what it reads: the refund answer is polite, the others not,
        # each quoting the output (a quote not in the output is an error).
        prompt = json.dumps(request["messages"])
        for text, score in (("Refunded.", 1), ("Hi there", 0), ("not", 0)):
            if text in prompt:
                return Reply(content={"score": score, "quotes": [text], "reason": "read it"})
        return Reply(content={"score": 0, "quotes": [], "reason": "nothing to read"})

    llm_server.responder = judge
    frozen = factories.dataset_version(
        factories.dataset("judged"),
        cases=CASES,
        checks=[
            {
                "label": "Polite",
                "kind": "custom",
                "threshold": 0.5,
                "params": {"criterion": "It is polite.", "anchors": "0 = no, 1 = yes"},
            }
        ],
    )
    env = {"SHERLOCK_JUDGE_BASE_URL": llm_server.url, "SHERLOCK_JUDGE_MODEL": "judge-test"}
    with api_server(tmp_path / "server.log", **env) as url:
        _, secret = api_key(world["builder"])
        with httpx.Client(
            base_url=f"{url}/api/v1", headers={"Authorization": f"Token {secret}"}, timeout=60
        ) as client:
            ensure_version(client)
            run = start(client, dataset="judged").json()
            work = all_work(client, run["work_url"])
            client.post(run["upload_url"], json={"items": items_for(work)})
            assert client.post(run["finish_url"]).status_code == 202
    asked = len(llm_server.requests)
    assert asked == 3  # one question per trial, asked by the server's engine

    recorded = {item["case"]: [answer(item["case"], 1)] for item in work}
    replay = AgentVersion.objects.create(
        agent=world["agent"], number=9, adapter="replay", config={"transcripts": recorded}
    )
    replayed = factories.start_run(
        world["builder"], replay, frozen, django_capture_on_commit_callbacks
    )

    def verdicts(run_id):
        return sorted(
            CheckResult.objects.filter(trial__run_id=run_id).values_list(
                "trial__case__key", "status", "score", "reason"
            )
        )

    judged = verdicts(run["id"])
    assert judged == verdicts(replayed.pk)
    assert [(key, status) for key, status, _, _ in judged] == [
        ("greet", CheckStatus.FAILED),
        ("refund", CheckStatus.PASSED),
        ("ship", CheckStatus.FAILED),
    ]
