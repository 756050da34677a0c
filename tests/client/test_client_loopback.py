"""The client and the `sherlock` command against a small Sherlock on loopback
(tests/client/loopback_sherlock.py): real HTTP, with the faults a real network has. What the
client must do whatever the server: retry, page, batch, report every case, exit right."""

import json
import signal
import subprocess
import sys
import time

import pytest
from sherlock_client import ApiError, Client, Unreachable, evaluate
from sherlock_client import metadata as source
from sherlock_client.http import Session

from tests.client import tasks_under_test
from tests.client.conftest import ROOT, cli_env, sherlock
from tests.client.loopback_sherlock import LoopbackSherlock
from tests.support.junit import outcomes, read_junit

TASKS = "tests.client.tasks_under_test"


@pytest.fixture
def server():
    with LoopbackSherlock(cases=10) as running:
        yield running


def stored_keys(server):
    return [item["key"] for batch in server.state.uploads for item in batch]


def call(server, task, **options):
    options.setdefault("agent", "bot")
    options.setdefault("dataset", "ds")
    options.setdefault("version", "abc123")
    return evaluate(task, url=server.url, api_key="good-key", **options)


# --- the exit-code matrix (the loopback server's rule: "ok" passes, an error is incomplete) ----


@pytest.mark.parametrize(
    ("task", "code", "outcome"),
    [
        ("passes", 0, "passed"),
        ("transcript", 0, "passed"),
        ("only_input", 0, "passed"),
        ("async_passes", 0, "passed"),
        ("fails", 1, "failed"),
        ("raises", 2, "incomplete"),
        ("garbage", 2, "incomplete"),
    ],
)
def test_the_command_exits_with_the_verdicts_code(server, task, code, outcome, tmp_path):
    done = sherlock(
        [
            "run",
            "--agent",
            "bot",
            "--dataset",
            "ds",
            "--task",
            f"{TASKS}:{task}",
            "--version",
            "v1",
            "--json",
            str(tmp_path / "r.json"),
        ],
        server.url,
        "good-key",
    )
    assert done.returncode == code, done.stderr
    written = json.loads((tmp_path / "r.json").read_text())
    assert written["outcome"] == outcome
    assert written["url"].endswith(f"/runs/{written['run']}/")
    assert len(stored_keys(server)) == 10


def test_a_wrong_key_exits_3(server):
    done = sherlock(
        [
            "run",
            "--agent",
            "bot",
            "--dataset",
            "ds",
            "--task",
            f"{TASKS}:passes",
            "--version",
            "v1",
        ],
        server.url,
        "wrong-key",
    )
    assert done.returncode == 3
    assert "401" in done.stderr and "not_authenticated" in done.stderr
    assert server.state.runs == {}


def test_an_unknown_dataset_exits_3_naming_it(server):
    done = sherlock(
        [
            "run",
            "--agent",
            "bot",
            "--dataset",
            "nope",
            "--task",
            f"{TASKS}:passes",
            "--version",
            "v1",
        ],
        server.url,
        "good-key",
    )
    assert done.returncode == 3
    assert "no dataset 'nope'" in done.stderr and "field dataset" in done.stderr


def test_an_unreachable_server_exits_3(tmp_path):
    with LoopbackSherlock() as gone:
        url = gone.url
    done = sherlock(
        [
            "--retries",
            "1",
            "run",
            "--agent",
            "bot",
            "--dataset",
            "ds",
            "--task",
            f"{TASKS}:passes",
            "--version",
            "v1",
        ],
        url,
        "good-key",
    )
    assert done.returncode == 3
    assert "cannot reach" in done.stderr


def test_a_task_that_cannot_be_imported_exits_3_before_anything_is_created(server):
    done = sherlock(
        [
            "run",
            "--agent",
            "bot",
            "--dataset",
            "ds",
            "--task",
            "no_such_module:fn",
            "--version",
            "v1",
        ],
        server.url,
        "good-key",
    )
    assert done.returncode == 3
    assert "cannot import no_such_module" in done.stderr
    assert server.state.runs == {}


# --- what the function does --------------------------------------------------------------------


def test_a_raise_a_hang_and_garbage_are_each_an_error_item_never_a_missing_case(server):
    result = call(server, f"{TASKS}:mixed", timeout=0.5, concurrency=4)
    errors = {
        item["key"]: item["error"]
        for batch in server.state.uploads
        for item in batch
        if "error" in item
    }
    kinds = sorted(e["kind"] for e in errors.values())
    assert kinds == ["invalid", "raised", "timeout"]
    assert any("ValueError: bad case" in e["message"] for e in errors.values())
    assert any("list" in e["message"] for e in errors.values() if e["kind"] == "invalid")
    assert len(stored_keys(server)) == 10  # every case, once
    assert result.exit_code == 2
    assert (result.stats.raised, result.stats.timeout, result.stats.invalid) == (1, 1, 1)


def test_an_async_function_that_hangs_is_cancelled_as_a_timeout(server):
    result = call(server, f"{TASKS}:async_hangs", timeout=0.2, concurrency=10)
    assert result.stats.timeout == 10
    assert result.exit_code == 2


def test_the_pool_never_has_more_calls_in_flight_than_the_concurrency(server):
    tasks_under_test.PEAK.update(now=0, max=0)
    call(server, tasks_under_test.counted, concurrency=3, repetitions=2)
    assert 1 <= tasks_under_test.PEAK["max"] <= 3
    assert len(stored_keys(server)) == 20


def test_every_case_and_repetition_is_sent_once_with_its_key(server):
    result = call(server, f"{TASKS}:passes", repetitions=3)
    keys = stored_keys(server)
    assert len(keys) == len(set(keys)) == 30
    assert {k.split(":")[1] for k in keys} == {"1", "2", "3"}
    assert result.stats.accepted == 30 and result.stats.duplicates == 0
    transcripts = [i["transcript"] for b in server.state.uploads for i in b]
    assert all(t["latency_ms"] >= 0 for t in transcripts)  # the client's measure


def test_a_refused_item_becomes_invalid_and_the_rest_of_its_batch_is_kept(server):
    def refuse_one(input, context):
        return "refuse me" if input["question"] == "q4" else "ok"

    result = call(server, refuse_one)
    stored = {i["key"]: i for b in server.state.uploads for i in b}
    assert len(stored) == 10
    refused = [i for i in stored.values() if "error" in i]
    assert len(refused) == 1
    assert refused[0]["error"]["kind"] == "invalid"
    assert "output refused" in refused[0]["error"]["message"]
    assert result.exit_code == 2


# --- the network ---------------------------------------------------------------------------------


def test_429_and_503_for_a_while_are_waited_out_honouring_retry_after(server):
    server.state.faults = [
        (429, {"Retry-After": "2"}),
        (503, {}),
        (503, {}),
        (429, {"Retry-After": "1"}),
    ]
    waits = []
    session = Session(server.url, "good-key", sleep=waits.append, backoff=0.1)
    answer = session.post(
        "versions/ensure/",
        {"agent": "bot", "name": "x", "adapter": "client", "config": {}},
        idempotent=True,
    )
    assert answer["name"] == "x"
    assert waits[0] == 2 and waits[3] == 1  # what Retry-After asked
    assert all(0 <= w <= 0.1 * 2**i for i, w in enumerate(waits) if i in (1, 2))  # jitter
    assert session.retried == 4


def test_a_creation_is_not_retried_after_a_502_it_may_have_done(server):
    server.state.faults = [(502, {})]
    session = Session(server.url, "good-key", sleep=lambda s: None)
    with pytest.raises(ApiError) as refused:
        session.post(
            "runs/client/", {"agent": "bot", "version": "v", "dataset": "ds", "repetitions": 1}
        )
    assert refused.value.status == 502
    assert server.state.runs == {}


def test_a_dropped_connection_is_retried(server):
    server.state.drop = 2
    with Client(server.url, "good-key", sleep=lambda s: None) as api:
        assert api.versions("bot") == []
    assert api.session.retried == 2


def test_retries_run_out_into_the_apis_error(server):
    server.state.faults = [(503, {})] * 5
    session = Session(server.url, "good-key", sleep=lambda s: None, retries=2)
    with pytest.raises(ApiError) as failed:
        session.get("versions/")
    assert failed.value.status == 503 and failed.value.code == "throttled"


def test_an_error_carries_the_apis_detail_code_and_field(server):
    with Client(server.url, "good-key") as api:
        api.ensure_version("bot", "v", {"entrypoint": "a:b"})
        with pytest.raises(ApiError) as conflict:
            api.ensure_version("bot", "v", {"entrypoint": "c:d"})
    assert (conflict.value.status, conflict.value.code, conflict.value.field) == (
        409,
        "conflict",
        "config",
    )


def test_nothing_listening_is_unreachable():
    with LoopbackSherlock() as gone:
        url = gone.url
    session = Session(url, "k", sleep=lambda s: None, retries=2)
    with pytest.raises(Unreachable) as unreachable:
        session.get("runs/")
    assert unreachable.value.code == "unreachable"
    assert session.retried == 2


def test_pagination_follows_next(server):
    with Client(server.url, "good-key") as api:
        created = api.create_client_run(agent="bot", version="v", dataset="ds", repetitions=2)
        work = list(api.work(created["id"]))
    assert len(work) == 20  # three pages of 7
    assert len({w["key"] for w in work}) == 20


# --- killed halfway, resumed -------------------------------------------------------------------


def test_a_run_killed_halfway_resumes_without_running_done_cases_again(server, tmp_path):
    server.state.cases = server.state.cases * 1  # 10 cases
    calls = tmp_path / "calls.log"
    env = cli_env(
        server.url, "good-key", SHERLOCK_TEST_TASK_SECONDS="0.2", SHERLOCK_TEST_CALLS=str(calls)
    )
    args = [
        sys.executable,
        "-m",
        "sherlock_client",
        "run",
        "--agent",
        "bot",
        "--dataset",
        "ds",
        "--task",
        f"{TASKS}:slow",
        "--version",
        "v1",
        "--repetitions",
        "3",
        "--concurrency",
        "2",
    ]
    process = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while len(stored_keys(server)) < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    before = len(set(stored_keys(server)))
    assert 6 <= before < 30
    run_id = next(iter(server.state.runs))
    calls.write_text("")
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "sherlock_client",
            "run",
            "--task",
            f"{TASKS}:slow",
            "--resume",
            str(run_id),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    keys = stored_keys(server)
    assert len(keys) == len(set(keys)) == 30  # none twice
    # The resumed process called the function exactly on what the server still lacked.
    assert len(calls.read_text().splitlines()) == 30 - before


# --- outputs -----------------------------------------------------------------------------------


def test_junit_json_and_markdown_describe_the_run(server, tmp_path):
    done = sherlock(
        [
            "run",
            "--agent",
            "bot",
            "--dataset",
            "ds",
            "--task",
            f"{TASKS}:mixed",
            "--version",
            "v1",
            "--repetitions",
            "2",
            "--timeout",
            "0.3",
            "--junit",
            str(tmp_path / "j.xml"),
            "--json",
            str(tmp_path / "r.json"),
            "--markdown",
            str(tmp_path / "c.md"),
        ],
        server.url,
        "good-key",
    )
    assert done.returncode == 2
    # This small server has no `/runs/{id}/junit/` (a server before it): the report holds the
    # verdict alone, failing, and says why; still valid for a CI's reader.
    suite = read_junit((tmp_path / "j.xml").read_text())
    assert outcomes(suite) == {"verdict": "failure"}
    (verdict,) = next(iter(suite)).result
    assert verdict.type == "incomplete"
    assert "JUnit report could not be read" in next(iter(suite)).system_out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["client"]["timeout"] == 2 and report["exit_code"] == 2
    comment = (tmp_path / "c.md").read_text()
    assert "INCOMPLETE" in comment and report["url"] in comment
    assert "`case-1`" in comment  # an agent error listed
    # Plain lines, not a terminal: no progress bar, one line per case.
    assert "case case-2: error" in done.stdout
    assert "\x1b[" not in done.stdout + done.stderr


def test_the_version_defaults_to_the_commit_and_ci_metadata_is_sent(server):
    found = source.collect(
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_SHA": "0123456789abcdef0123",
            "GITHUB_REF": "refs/pull/7/merge",
            "GITHUB_REF_NAME": "7/merge",
            "GITHUB_HEAD_REF": "feature",
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_REPOSITORY": "team/agent",
            "GITHUB_RUN_ID": "99",
        }
    )
    assert found == {
        "ci_provider": "github",
        "git_commit": "0123456789abcdef0123",
        "git_branch": "feature",
        "git_repository": "https://github.example/team/agent",
        "ci_run_id": "99",
        "ci_job_url": "https://github.example/team/agent/actions/runs/99",
        "pull_request": "7",
    }
    result = evaluate(
        f"{TASKS}:passes",
        agent="bot",
        dataset="ds",
        url=server.url,
        api_key="good-key",
        metadata=found,
    )
    run = server.state.runs[result.run["id"]]
    assert run["metadata"]["ci_job_url"] == found["ci_job_url"]
    assert run["metadata"]["config"] == {"entrypoint": f"{TASKS}:passes"}
    name = run["version"]
    assert name.startswith(f"{TASKS}:passes@0123456789ab")


def test_gitlab_variables_are_read():
    found = source.collect(
        {
            "GITLAB_CI": "true",
            "CI_COMMIT_SHA": "feed",
            "CI_COMMIT_REF_NAME": "main",
            "CI_JOB_URL": "https://gitlab.example/j/1",
            "CI_PIPELINE_ID": "5",
            "CI_PROJECT_URL": "https://gitlab.example/team/agent",
        }
    )
    assert found["ci_provider"] == "gitlab"
    assert found["ci_job_url"] == "https://gitlab.example/j/1"
    assert found["git_commit"] == "feed"


def test_verify_exits_1_for_a_version_not_published_and_0_for_one_that_is(server):
    with Client(server.url, "good-key") as api:
        version = api.ensure_version("bot", "v9")
    not_yet = sherlock(["verify", "--agent", "bot", "--version", "v9"], server.url, "good-key")
    assert not_yet.returncode == 1 and "not published" in not_yet.stdout
    server.state.published[version["id"]] = {
        "published": True,
        "state": "published",
        "published_at": "2026-12-02T08:00:00Z",
        "published_by": "publisher",
        "decision": {"id": 4, "outcome": "passed"},
        "bypass": None,
    }
    done = sherlock(["verify", "--agent", "bot", "--version", "v9"], server.url, "good-key")
    assert done.returncode == 0
    assert "by publisher" in done.stdout and "decision 4 (passed)" in done.stdout


def test_the_key_is_never_taken_from_the_command_line(server):
    env = {k: v for k, v in cli_env(server.url, "x").items() if k != "SHERLOCK_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "sherlock_client", "verify", "--agent", "bot", "--version", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3 and "SHERLOCK_API_KEY" in done.stderr


def test_a_cancelled_job_uploads_what_it_did_before_it_exits_3(server, tmp_path):
    calls = tmp_path / "calls.log"
    env = cli_env(
        server.url, "good-key", SHERLOCK_TEST_TASK_SECONDS="0.2", SHERLOCK_TEST_CALLS=str(calls)
    )
    args = [
        sys.executable,
        "-m",
        "sherlock_client",
        "run",
        "--agent",
        "bot",
        "--dataset",
        "ds",
        "--task",
        f"{TASKS}:slow",
        "--version",
        "v1",
        "--repetitions",
        "3",
        "--concurrency",
        "2",
    ]
    job = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while (not calls.exists() or len(calls.read_text().splitlines()) < 5) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.05)
    job.send_signal(signal.SIGTERM)  # what a CI system sends a job it cancels
    _, stderr = job.communicate(timeout=30)
    assert job.returncode == 3
    assert "interrupted" in stderr
    assert "Traceback" not in stderr, stderr  # one line, not the interpreter's teardown
    done = len(calls.read_text().splitlines())
    # Everything the function returned was sent but the calls in flight (at most 2).
    assert done - 2 <= len(set(stored_keys(server))) <= done


def test_a_url_without_a_scheme_is_a_configuration_error_at_once(tmp_path):
    """Not retried for seconds as an unreachable server would be: exit 3 with one line, and
    nothing asked of anyone."""
    done = sherlock(
        ["run", "--agent", "bot", "--dataset", "ds", "--task", f"{TASKS}:passes"],
        "127.0.0.1:8000",
        "good-key",
        timeout=20,
    )
    assert done.returncode == 3
    assert "must start with http:// or https:// (got '127.0.0.1:8000')" in done.stderr
    assert "Traceback" not in done.stderr
