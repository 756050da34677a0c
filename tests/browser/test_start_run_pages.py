"""Starting a run in a real browser: a Builder uses the admin's "Start a run…" on an
agent version, sees the estimate with "price missing (N calls)", confirms and lands on the
changelist with a link to the run; then the run list's form, estimate then confirm, which goes
to the run's page. The start page opens with its form open; its estimate shows the known cost
with what has no price and warns that an unpriced judge fails the contract's coverage gate;
the run list gives each finished run its verdict. The server and browser fixtures are in
tests/browser/conftest.py."""

import pytest

from evaluations.models import Run
from tests.support import factories
from tests.support.browser import log_in, pick
from tests.support.contract_runs import add_trial, empty_run, import_seed_variant

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
    pick(page, "dataset_version", dataset_version.dataset.slug, str(dataset_version))
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
    pick(page, "agent_version", version.agent.slug, str(version))
    page.click("input[name=estimate]")
    page.wait_for_selector("#estimate")
    shot(page, "admin-run-an-agent-estimate")

    # The run list: open the form, estimate (htmx), start; the browser goes to the run's page.
    page.goto(f"{server}/runs/")
    page.click("text=Start a run")
    pick(page, "agent_version", version.agent.slug, str(version))
    pick(page, "dataset_version", dataset_version.dataset.slug, str(dataset_version))
    page.click("#start-run button[name=estimate]")
    page.wait_for_selector("#start-estimate")
    assert "price missing (2 calls)" in page.inner_text("#start-estimate")
    shot(page, "run-list-start-estimate")
    page.click("#start-run button[name=confirm]")
    page.wait_for_url(f"{server}/runs/*/")
    newest = Run.objects.order_by("-pk").first()
    assert page.url.endswith(f"/runs/{newest.pk}/") and newest.repetitions == 1
    shot(page, "run-list-start-done")


@pytest.fixture
def unpriced_judge(monkeypatch):
    """The server counts judge calls in its estimates (a judge is configured; none is called)
    of a model without a price. Requested before `server`, so runserver starts with it."""
    monkeypatch.setenv("SHERLOCK_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SHERLOCK_JUDGE_MODEL", "unpriced-judge")


def test_the_start_page_warns_of_an_unpriced_judge_and_the_list_gives_verdicts(
    unpriced_judge, server, browser, shot
):
    factories.user("builder", role="Builder")
    agent = factories.agent("refunds")
    version = factories.agent_version(agent)
    add_trial(empty_run(agent_version=version), cost_usd="0.10")  # its cost history
    dataset_version = factories.dataset_version(
        factories.dataset("polite"),
        cases=[("c1", "hi", {}), ("c2", "yo", {})],
        checks=[{"label": "Polite", "kind": "custom", "params": {"criterion": "polite"}}],
    )
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    log_in(page, server, "builder", "/runs/start/")

    # The start page is the form: open, its choices visible without a click.
    page.wait_for_selector("#start-run #id_agent_version + .select2", state="visible")
    shot(page, "start-page-open")
    pick(page, "agent_version", version.agent.slug, str(version))
    pick(page, "dataset_version", dataset_version.dataset.slug, str(dataset_version))
    page.click("#start-run button[name=estimate]")
    page.wait_for_selector("#start-estimate")
    assert "$0.20 + price missing (2 calls)" in page.inner_text("#start-estimate")
    warning = page.inner_text("#start-coverage-warning")
    assert "Judge calls without a price (unpriced-judge)" in warning
    assert "coverage gate will fail" in warning and "Model prices" in warning
    assert page.is_visible("#start-run button[name=confirm]")  # a warning, not a refusal
    shot(page, "start-estimate-unpriced-judge")

    # The run list: each finished run's verdict, as its page gives it.
    passed = import_seed_variant("stable v1", factories.agent_version(agent))
    failed = import_seed_variant("fast v2", factories.agent_version(agent))
    page.goto(f"{server}/runs/")
    row = "#runs tr:has(a[href='/runs/{}/'])"
    assert page.inner_text(row.format(passed.pk) + " [data-verdict]").strip() == "PASSED"
    verdict = page.inner_text(row.format(failed.pk) + " [data-verdict]")
    assert verdict.split() == ["FAILED", "contract:", "false", "success"]
    assert not page.is_visible("#start-run select[name=agent_version]")  # folded on the list
    shot(page, "run-list-verdicts")
    page.click(f"a[href='/runs/{failed.pk}/']")
    assert "the contract fails at false success" in page.inner_text("#verdict")


def test_a_scoped_builder_runs_the_agent_on_its_gate_dataset(server, browser, shot, live_db):
    """omar builds acme-helpdesk only, and holds no role on acme-faq, the dataset an Admin chose
    as its gate: *Start a run* offers it and starts the run, whose page opens for him.
    Screenshot: `start-run-gate-dataset`."""
    from governance.models import GateDataset
    from tests.support.governance import grant_on

    admin = factories.user("ada", role="Admin")
    agent = factories.agent("acme-helpdesk")
    version = factories.agent_version(agent, number=1)
    faq = factories.dataset("acme-faq")
    frozen = factories.dataset_version(
        faq,
        cases=[("hello", "Hello?", {})],
        checks=[{"label": "shape", "kind": "output_type", "params": {"type": "text"}}],
    )
    GateDataset.objects.create(agent=agent, dataset=faq, chosen_by=admin)
    omar = grant_on(factories.user("omar"), "Builder", agent)

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "omar", "/runs/")
    page.click("text=Start a run")
    pick(page, "agent_version", "acme", str(version))
    pick(page, "dataset_version", "acme-faq", str(frozen))
    page.click("#start-run button[name=estimate]")
    page.wait_for_selector("#start-estimate")
    shot(page, "start-run-gate-dataset")
    page.click("#start-run button[name=confirm]")
    page.wait_for_url(f"{server}/runs/*/")
    run = Run.objects.order_by("-pk").first()
    assert run.dataset_version == frozen and run.requested_by == omar
    assert "acme-faq" in page.inner_text("body")
