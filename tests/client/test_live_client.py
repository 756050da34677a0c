"""The `sherlock` command and the Python API against a live Sherlock over real HTTP
(tests/client/live.py: the project's web server and a real worker on the test database): the
exit-code matrix, a server answering 429 and 503 for a while, a job killed halfway and resumed,
a function that raises, hangs and returns garbage, a wrong key, an unknown dataset, the Python
API, a gate fulfilled by the client and `sherlock verify` guarding a deploy."""

import json
import signal
import subprocess
import sys
import time

import pytest
from sherlock_client import evaluate

from agents.models import AgentVersion
from evaluations.choices import TrialStatus
from evaluations.models import Run, Trial
from tests.client.conftest import ROOT, cli_env, sherlock
from tests.client.flaky_proxy import FlakyProxy
from tests.client.live import CASES
from tests.support.junit import outcomes, read_junit

pytestmark = pytest.mark.slow
TASKS = "tests.client.tasks_under_test"


def run_args(task, *extra, version="v1", dataset="refunds"):
    return [
        "run",
        "--agent",
        "refund-bot",
        "--dataset",
        dataset,
        "--task",
        f"{TASKS}:{task}",
        "--version",
        version,
        *extra,
    ]


def the_run():
    return Run.objects.select_related("agent_version").get()


@pytest.mark.parametrize(
    ("task", "code", "outcome"),
    [("refunds", 0, "passed"), ("no_refund", 1, "failed"), ("raises", 2, "incomplete")],
)
def test_the_exit_code_is_the_servers_verdict(live_sherlock, task, code, outcome, tmp_path):
    out = tmp_path / "result.json"
    done = sherlock(run_args(task, "--json", str(out)), live_sherlock.url, live_sherlock.key)
    assert done.returncode == code, done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["outcome"] == outcome and result["verdict"]["exit_code"] == code
    run = the_run()
    assert result["url"].endswith(f"/runs/{run.pk}/")
    assert run.status == "completed" and run.agent_version.adapter == "client"
    assert Trial.objects.filter(run=run).count() == CASES


def test_a_raise_a_hang_and_garbage_are_agent_errors_of_the_run(live_sherlock, tmp_path):
    done = sherlock(
        run_args(
            "refunds_mixed",
            "--timeout",
            "1",
            "--junit",
            str(tmp_path / "j.xml"),
            "--json",
            str(tmp_path / "r.json"),
        ),
        live_sherlock.url,
        live_sherlock.key,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    errors = dict(Trial.objects.filter(status=TrialStatus.ERROR).values_list("case__key", "error"))
    assert set(errors) == {"case-1", "case-2", "case-3"}
    assert "ValueError: bad case" in errors["case-1"]
    assert "1 s" in errors["case-2"]
    assert "float" in errors["case-3"]
    assert Trial.objects.filter(status=TrialStatus.COMPLETED).count() == CASES - 3
    # The server's report: the three as errors with their reason, the verdict failed.
    suite = read_junit((tmp_path / "j.xml").read_text())
    found = outcomes(suite)
    assert {key for key, kind in found.items() if kind == "error"} == {"case-1", "case-2", "case-3"}
    assert found["verdict"] == "failure" and suite.errors == 3
    assert {case.result[0].type for case in suite if found[case.name] == "error"} == {"agent_error"}
    # The server's case state, read by the client: no verdict for the three, never "passed".
    rows = {row["case"]: row for row in json.loads((tmp_path / "r.json").read_text())["cases"]}
    unscored = {key for key, row in rows.items() if row["status"] == "unscored"}
    assert unscored == {"case-1", "case-2", "case-3"}
    assert {rows[key]["reason"] for key in unscored} == {"agent error"}
    assert not any(rows[key]["passed"] for key in unscored)
    assert "case case-1: unscored (agent error)" in done.stdout


def test_a_wrong_key_exits_3(live_sherlock):
    done = sherlock(run_args("refunds"), live_sherlock.url, "not-a-key")
    assert done.returncode == 3
    assert "401" in done.stderr or "403" in done.stderr
    assert not Run.objects.exists()


def test_an_unknown_dataset_exits_3_naming_it(live_sherlock):
    done = sherlock(run_args("refunds", dataset="nope"), live_sherlock.url, live_sherlock.key)
    assert done.returncode == 3
    assert "dataset" in done.stderr
    assert not Run.objects.exists()


def test_429_and_503_for_a_while_are_waited_out(live_sherlock):
    # Six in a row at the start (the CLI retries six times), then every other request, 4 more.
    faults = [(429, {"Retry-After": "1"}), (503, {}), (503, {}), (429, {"Retry-After": "0"})]
    faults += [(503, {})] * 2
    with FlakyProxy(live_sherlock.url, faults, every=2, later=4) as proxy:
        done = sherlock(run_args("refunds"), proxy.url, live_sherlock.key)
    assert done.returncode == 0, done.stdout + done.stderr
    assert proxy.refused == 10
    assert Trial.objects.filter(status=TrialStatus.COMPLETED).count() == CASES


def test_a_job_killed_halfway_resumes_without_doing_done_cases_again(live_sherlock, tmp_path):
    calls = tmp_path / "calls.log"
    env = cli_env(
        live_sherlock.url,
        live_sherlock.key,
        SHERLOCK_TEST_TASK_SECONDS="0.3",
        SHERLOCK_TEST_CALLS=str(calls),
    )
    args = [
        sys.executable,
        "-m",
        "sherlock_client",
        *run_args("refunds_slowly", "--repetitions", "3", "--concurrency", "2"),
    ]
    job = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def uploaded():
        return Trial.objects.filter(uploaded_at__isnull=False).count()

    deadline = time.monotonic() + 60
    while uploaded() < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    job.send_signal(signal.SIGKILL)  # a CI job killed: no cleanup, no last upload
    job.wait(timeout=10)
    before = uploaded()
    total = CASES * 3
    assert 4 <= before < total
    run = the_run()
    calls.write_text("")
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "sherlock_client",
            "run",
            "--task",
            f"{TASKS}:refunds_slowly",
            "--resume",
            str(run.pk),
            "--json",
            str(tmp_path / "r.json"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["client"]["duplicates"] == 0
    assert report["client"]["called"] == total - before
    assert len(calls.read_text().splitlines()) == total - before
    assert Trial.objects.filter(run=run).count() == total
    assert Trial.objects.filter(run=run, status=TrialStatus.COMPLETED).count() == total


def test_the_python_api_returns_the_result(live_sherlock):
    from tests.client.tasks_under_test import refunds

    result = evaluate(
        refunds,
        agent="refund-bot",
        dataset="refunds",
        version="py-1",
        repetitions=2,
        concurrency=4,
        url=live_sherlock.url,
        api_key=live_sherlock.key,
    )
    assert result.exit_code == 0 and result.outcome == "passed"
    assert result.url.startswith(live_sherlock.url)
    assert len(result.cases) == CASES
    assert all(len(row["repetitions"]) == 2 for row in result.cases)
    assert result.stats.accepted == 2 * CASES


def test_git_and_ci_metadata_are_stored_on_the_run(live_sherlock, tmp_path):
    """On a GitHub pull request the version is the pull request's head (from the event's
    payload), not the test merge commit in GITHUB_SHA; two task functions at one commit are two
    versions by default, never a 409; `verify --task` finds the version `run --task` named."""
    head = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 17, "head": {"sha": head}}}))
    env = cli_env(
        live_sherlock.url,
        live_sherlock.key,
        GITHUB_ACTIONS="true",
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_EVENT_PATH=str(event),
        GITHUB_SHA="ffffffffffff0000000000000000000000000000",  # the test merge commit
        GITHUB_REF="refs/pull/17/merge",
        GITHUB_HEAD_REF="feature/refunds",
        GITHUB_REPOSITORY="team/refund-bot",
        GITHUB_RUN_ID="1234",
    )

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "sherlock_client", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    for task in ("refunds", "passes"):
        done = cli(
            "run", "--agent", "refund-bot", "--dataset", "refunds", "--task", f"{TASKS}:{task}"
        )
        assert done.returncode in (0, 1), done.stdout + done.stderr
    names = sorted(AgentVersion.objects.values_list("name", flat=True))
    assert len(names) == 2
    assert [n.split("@")[0] for n in names] == [f"{TASKS}:passes", f"{TASKS}:refunds"]
    assert all(n.split("@")[1].startswith(head[:12]) for n in names)
    run = Run.objects.get(agent_version__name=names[1])
    assert run.source["git_commit"] == head
    assert run.source["git_branch"] == "feature/refunds"
    assert run.source["pull_request"] == "17"
    assert run.source["ci_job_url"] == "https://github.com/team/refund-bot/actions/runs/1234"

    # The deploy guard names the same version from the same task, without importing it.
    checked = cli("verify", "--agent", "refund-bot", "--task", f"{TASKS}:refunds")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert f"{names[1]} is not published" in checked.stdout
    # v<number> names a version by its number; a bare number is a name.
    by_number = cli("verify", "--agent", "refund-bot", "--version", "v1")
    assert by_number.returncode == 1 and "is not published" in by_number.stdout
    bare = cli("verify", "--agent", "refund-bot", "--version", "1")
    assert bare.returncode == 3 and "no version named '1' (version number 1 is v1)" in bare.stderr


def test_hostile_outputs_are_invalid_alone_and_large_batches_are_never_refused(
    live_sherlock, tmp_path
):
    """A lone surrogate, a NUL, an answer over the item limit and an error message holding both
    become `invalid` (or `raised`) items with their reasons, each alone; the other cases' 900 KB
    transcripts (3.6 MB in all, over Django's default 2.5 MB body) go up in batches under the
    body limit, never a 413: the run is scored, not lost (exit 2: four cases have no
    verdict)."""
    done = sherlock(
        run_args("refunds_hostile", "--repetitions", "2", "--json", str(tmp_path / "r.json")),
        live_sherlock.url,
        live_sherlock.key,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    errors = dict(Trial.objects.filter(status=TrialStatus.ERROR).values_list("case__key", "error"))
    assert set(errors) == {"case-0", "case-1", "case-2", "case-3"}
    assert "lone surrogate (\\ud83d" in errors["case-0"]
    assert "NUL character" in errors["case-1"]
    assert "answer is 1,500,1" in errors["case-2"]
    assert "over the server's limit of 1,048,576" in errors["case-2"]
    assert "ValueError: bad \\x00 byte \\udc80 here" in errors["case-3"]
    completed = Trial.objects.filter(status=TrialStatus.COMPLETED)
    assert completed.count() == (CASES - 4) * 2
    assert all(len(t.transcript["contexts"][0]) == 900_000 for t in completed)
    client = json.loads((tmp_path / "r.json").read_text())["client"]
    assert client["accepted"] == CASES * 2 and client["invalid"] == 3 * 2


def test_an_unknown_policy_is_refused_before_any_call(live_sherlock, tmp_path):
    calls = tmp_path / "calls.log"
    done = subprocess.run(
        [sys.executable, "-m", "sherlock_client", *run_args("refunds_slowly", "--policy", "999")],
        cwd=ROOT,
        env=cli_env(live_sherlock.url, live_sherlock.key, SHERLOCK_TEST_CALLS=str(calls)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "--policy 999: no publishing policy has that id" in done.stderr
    assert not calls.exists() and not Run.objects.exists()
