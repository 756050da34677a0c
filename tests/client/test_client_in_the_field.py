"""The client as a team meets it in the field, against a live Sherlock over real HTTP: the
verdict awaited on the server's word (a long poll), nothing made before everything is checked,
no run left waiting after the client itself failed, notebooks and async code (`aevaluate`,
`evaluate` inside a running loop)."""

import asyncio
import threading

import pytest
from sherlock_client import Client, ConfigError, aevaluate, evaluate, flow

from agents.models import AgentVersion
from evaluations.choices import RunStatus
from evaluations.models import Run
from tests.client.conftest import sherlock
from tests.client.live import CASES
from tests.client.tasks_under_test import refunds

pytestmark = pytest.mark.slow


def test_the_verdict_is_held_until_the_run_finishes(live_sherlock):
    """`?wait=` holds the answer while the run is unfinished and answers once it is (here the
    run is cancelled from another connection meanwhile); a `wait` that is no number is a 400
    naming the field; without `wait` a waiting run's verdict is pending at once."""
    with Client(live_sherlock.url, live_sherlock.key) as api:
        api.ensure_version("refund-bot", "held-1", {})
        run = api.create_client_run(agent="refund-bot", version="held-1", dataset="refunds")
        assert api.verdict(run["id"])["outcome"] == "pending"
        refused = pytest.raises(
            flow.ApiError, api.session.get, f"runs/{run['id']}/verdict/", wait="x"
        )
        assert refused.value.status == 400 and refused.value.field == "wait"

        cancel = threading.Timer(
            0.5, lambda: Client(live_sherlock.url, live_sherlock.key).cancel(run["id"])
        )
        cancel.start()
        try:
            held = api.verdict(run["id"], wait=20)
        finally:
            cancel.join()
        assert held["status"] == "cancelled" and held["outcome"] != "pending"


class CountingClient(Client):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.verdict_calls = 0

    def verdict(self, *args, **kwargs):
        self.verdict_calls += 1
        return super().verdict(*args, **kwargs)


def test_the_client_learns_the_verdict_from_one_held_call(live_sherlock):
    """The run is scored by the worker after `finish`; the client asks once and the server
    answers when the scoring is done (polling asked again and again, up to 5 s apart)."""
    with CountingClient(live_sherlock.url, live_sherlock.key) as api:
        result = flow.run(
            api,
            agent="refund-bot",
            dataset="refunds",
            task=refunds,
            version="poll-1",
            options=flow.RunOptions(repetitions=2, concurrency=4, progress=False),
        )
    assert result.exit_code == 0, result.verdict
    assert api.verdict_calls == 1


def test_an_unknown_agent_is_told_in_the_datasets_words(live_sherlock):
    done = sherlock(
        [
            "run",
            "--agent",
            "typo-bot",
            "--dataset",
            "refunds",
            "--task",
            "tests.client.tasks_under_test:refunds",
        ],
        live_sherlock.url,
        live_sherlock.key,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no agent 'typo-bot' (or you may not see it)" in done.stderr
    assert "Traceback" not in done.stderr and "Object with slug" not in done.stderr
    assert not AgentVersion.objects.exists() and not Run.objects.exists()


def test_nothing_is_made_before_the_dataset_is_known(live_sherlock):
    done = sherlock(
        [
            "run",
            "--agent",
            "refund-bot",
            "--dataset",
            "nope",
            "--task",
            "tests.client.tasks_under_test:refunds",
        ],
        live_sherlock.url,
        live_sherlock.key,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no dataset 'nope'" in done.stderr
    assert not AgentVersion.objects.exists() and not Run.objects.exists()


def test_a_client_failure_cancels_the_run_it_made(live_sherlock):
    """An error of the client's own (here a caller's callback) while fulfilling a run it
    created: the run is cancelled, not left waiting for a client that is gone."""

    def broken(run):
        raise RuntimeError("the caller's callback broke")

    with Client(live_sherlock.url, live_sherlock.key) as api, pytest.raises(RuntimeError):
        flow.run(
            api,
            agent="refund-bot",
            dataset="refunds",
            task=refunds,
            version="orphan-1",
            options=flow.RunOptions(progress=False, on_run=broken),
        )
    assert Run.objects.get().status == RunStatus.CANCELLED


def test_notebooks_and_async_code(live_sherlock):
    """Inside a running loop: `evaluate` refuses an async task before anything is made and runs
    a sync one; `aevaluate` runs an async task on the caller's own loop."""
    seen_loops = set()

    async def answer(input, context):
        seen_loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(0.01)
        return refunds(input, context)

    where = {"url": live_sherlock.url, "api_key": live_sherlock.key}

    async def notebook():
        with pytest.raises(ConfigError, match="aevaluate"):
            evaluate(answer, agent="refund-bot", dataset="refunds", version="nb-0", **where)
        refused_first = await asyncio.to_thread(lambda: Run.objects.count())

        synced = evaluate(refunds, agent="refund-bot", dataset="refunds", version="nb-1", **where)
        awaited = await aevaluate(
            answer, agent="refund-bot", dataset="refunds", version="nb-2", concurrency=4, **where
        )
        return synced, awaited, id(asyncio.get_running_loop()), refused_first

    synced, awaited, loop_id, refused_first = asyncio.run(notebook())
    assert refused_first == 0 and not AgentVersion.objects.filter(name="nb-0").exists()
    assert synced.exit_code == 0 and awaited.exit_code == 0, awaited.verdict
    assert awaited.stats.ok == CASES
    assert seen_loops == {loop_id}
