"""Stopping early in chromium: a Builder starts a run from the run list with "Stop early"
checked, reads on the estimate that it is the most the run can cost, confirms, and the run's
page says it stopped early, with its seed, why, and how many trials never ran, beside the
failed verdict. Screenshots: `stop-early-estimate`, `stop-early-run`."""

import pytest

from evaluations.engine import run_shard
from evaluations.models import Run
from tests.evaluations.test_stop_early import world
from tests.support import factories
from tests.support.browser import log_in, pick

pytestmark = [pytest.mark.slow]


def test_a_builder_starts_a_run_that_stops_early_and_reads_why(server, browser, shot):
    admin = factories.user("admin-early", role="Admin")
    factories.user("builder", role="Builder")
    _, version, dataset_version = world(admin, cases=150, every=2)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "builder", "/runs/")
    page.click("text=Start a run")
    pick(page, "agent_version", version.agent.slug, str(version))
    pick(page, "dataset_version", dataset_version.dataset.slug, str(dataset_version))
    page.check("input[name=stop_early]")
    page.click("#start-run button[name=estimate]")
    page.wait_for_selector("#start-stop-early")
    assert "the most it can cost" in page.inner_text("#start-stop-early")
    shot(page, "stop-early-estimate")
    page.click("#start-run button[name=confirm]")
    page.wait_for_url(f"{server}/runs/*/")
    run = Run.objects.get()
    # The page server enqueues the run's shards for workers; this test is its worker.
    trials = list(run.trials.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(trials), 50):
        run_shard(run.pk, trials[start : start + 50])
    run.refresh_from_db()
    page.reload()
    text = page.inner_text("#stop-early")
    assert f"Stopped early (seed {run.seed}): a gate failed" in text
    assert f"{run.sequential['trials_not_run']} trial(s) never ran" in text
    assert page.get_attribute("#verdict", "data-outcome") == "failed"
    assert "decided after" in page.inner_text("ul.gates")
    assert page.inner_text("#trials-not-run") == (
        f"{run.sequential['trials_not_run']} never ran: stopped early"
    )
    shot(page, "stop-early-run")
