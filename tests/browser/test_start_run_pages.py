"""Starting a run in a real browser (issue 12): a Builder uses the admin's "Start a run…" on an
agent version, sees the estimate with "price missing (N calls)", confirms and lands on the
changelist with a link to the run; then the run list's form, estimate then confirm, which goes
to the run's page. The server and browser fixtures are in tests/browser/conftest.py."""

import pytest

from evaluations.models import Run
from tests.support import factories
from tests.support.browser import log_in

pytestmark = [pytest.mark.slow]


def test_a_builder_starts_runs_from_the_admin_and_from_the_run_list(server, browser, shot):
    factories.user("builder", role="Builder")
    version = factories.agent_version(callable_path="tests.support.agents_under_test.echo")
    dataset_version = factories.dataset_version(
        cases=[("greeting", "hello", {}), ("farewell", "bye", {})],
        checks=[{"label": "Shape", "kind": "output_type", "params": {"type": "text"}}],
    )
    page = browser.new_page()
    log_in(page, server, "builder", "/admin/agents/agentversion/")

    # The admin: select the version, choose the action, then the dataset version.
    page.check(f"input[name=_selected_action][value='{version.pk}']")
    page.select_option("select[name=action]", "start_run")
    page.click("button[name=index]")
    page.wait_for_selector("text=Estimate")
    page.select_option("select[name=dataset_version]", str(dataset_version.pk))
    page.fill("input[name=repetitions]", "2")
    page.click("input[name=estimate]")
    page.wait_for_selector("#estimate")
    assert "price missing (4 calls)" in page.inner_text("#estimate")
    shot(page, "admin-start-run-estimate")
    assert not Run.objects.exists()
    page.click("input[name=apply]")
    page.wait_for_selector(".messagelist")
    run = Run.objects.get()
    assert (run.agent_version, run.repetitions) == (version, 2)
    assert run.requested_by.username == "builder"
    assert f"run #{run.pk}" in page.inner_text(".messagelist")
    shot(page, "admin-start-run-done")

    # The dataset version's action: the other side to choose.
    page.goto(f"{server}/admin/evaluations/datasetversion/")
    page.check(f"input[name=_selected_action][value='{dataset_version.pk}']")
    page.select_option("select[name=action]", "start_run")
    page.click("button[name=index]")
    page.select_option("select[name=agent_version]", str(version.pk))
    page.click("input[name=estimate]")
    page.wait_for_selector("#estimate")
    shot(page, "admin-run-an-agent-estimate")

    # The run list: open the form, estimate (htmx), start; the browser goes to the run's page.
    page.goto(f"{server}/runs/")
    page.click("text=Start a run")
    page.select_option("#start-run select[name=agent_version]", str(version.pk))
    page.select_option("#start-run select[name=dataset_version]", str(dataset_version.pk))
    page.click("#start-run button[name=estimate]")
    page.wait_for_selector("#start-estimate")
    assert "price missing (2 calls)" in page.inner_text("#start-estimate")
    shot(page, "run-list-start-estimate")
    page.click("#start-run button[name=confirm]")
    page.wait_for_url(f"{server}/runs/*/")
    newest = Run.objects.order_by("-pk").first()
    assert page.url.endswith(f"/runs/{newest.pk}/") and newest.repetitions == 1
    shot(page, "run-list-start-done")
