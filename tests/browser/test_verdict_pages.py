"""The verdict in a real browser (points 3 and 5): a question-answering dataset
without outcome verifiers under a policy with no budget reads PASSED on its run page, names the
missing outcome verification with what adds it and where it is documented, and never "fails at
budget"; a run whose blocking model check no judge could score reads INCOMPLETE with the
no-judge sentence and the calibration link, and its contract table's gate cell reads
"incomplete", never "pass"; the Start-a-run estimate on /runs/ warns of the
missing judge with the setting and the docs. The server and browser fixtures are in
tests/browser/conftest.py; the runs are made by `manage.py evaluate` with the real engine."""

import contextlib
from io import StringIO

import pytest
from django.core.management import call_command

from evaluations.models import Run
from governance.models import PublishingPolicy
from tests.support import factories
from tests.support.browser import log_in, pick
from tests.test_verdict_matrix import HERE, MODEL, dataset_for

pytestmark = [pytest.mark.slow]


@pytest.fixture
def no_judge(monkeypatch, settings):
    """Neither the test process (the engine scores the runs) nor runserver has a judge."""
    monkeypatch.setenv("SHERLOCK_JUDGE_BASE_URL", "")
    settings.SHERLOCK_JUDGE_BASE_URL = ""


def evaluated(agent, kind, builder):
    factories.agent_version(agent, callable_path=f"{HERE}.answering_agent")
    PublishingPolicy.objects.get_or_create(
        agent=agent, version=1, defaults={"name": f"{agent.slug} policy"}
    )
    dataset_version = dataset_for(kind)
    with contextlib.suppress(SystemExit):  # the verdict's exit code
        call_command(
            "evaluate",
            agent.slug,
            "--dataset",
            dataset_version.dataset.slug,
            "--user",
            builder.username,
            stdout=StringIO(),
        )
    return Run.objects.latest("pk")


def test_the_run_page_says_what_a_dataset_lacks_and_the_estimate_warns_of_no_judge(
    no_judge, server, browser, shot
):
    builder = factories.user("builder", role="Builder")
    qa = evaluated(factories.agent("qa-bot"), "no verifier", builder)
    unscored = evaluated(factories.agent("polite-bot"), "unscored model check", builder)
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, "builder", f"/runs/{qa.pk}/")

    page.wait_for_selector("#verdict")
    verdict = page.inner_text("#verdict")
    assert verdict.startswith("PASSED") and "Exit code 0" in verdict
    missing = page.inner_text("#missing")
    assert "have no verified outcome" in missing
    assert "Add an outcome verifier (outcome_check) to the dataset's cases" in missing
    assert "«requires verified outcomes» off" in missing
    link = page.get_attribute("#missing a", "href")
    assert link.endswith("/docs/contract/#a-dataset-without-outcome-verifiers")
    body = page.inner_text("main")
    assert "fails at budget" not in body and "seed 003" not in body and "DESIGN" not in body
    assert "1. coverage: 2 of 2 declared completion(s) unverified" in body
    assert "budget: no budget set" in body
    shot(page, "run-page-qa-without-outcome-verifiers")

    page.goto(f"{server}/runs/{unscored.pk}/")
    verdict = page.inner_text("#verdict")
    assert verdict.startswith("INCOMPLETE") and "Exit code 2" in verdict
    assert "SHERLOCK_JUDGE_BASE_URL" in page.inner_text("#no-judge")
    assert page.get_attribute("#no-judge a", "href").endswith("/docs/judges/")
    check = unscored.dataset_version.checks.get(kind="custom")
    assert page.get_attribute("#calibration-links a", "href") == f"/checks/{check.pk}/calibration/"
    # The contract table's gate cell is the verdict's: an incomplete run never reads "pass".
    gate = page.locator("#contract tbody td").last.locator(".status")
    assert gate.inner_text() == "incomplete (blocking checks scored)"
    assert gate.get_attribute("class") == "status warn"
    shot(page, "run-page-incomplete-no-judge")

    # The run list: both verdicts in short, then the Start-a-run estimate.
    page.goto(f"{server}/runs/")
    assert (
        page.get_attribute(f"tr:has(a[href='/runs/{qa.pk}/']) td[data-verdict]", "data-verdict")
        == "passed"
    )
    page.click("text=Start a run")
    agent_version, dataset_version = unscored.agent_version, unscored.dataset_version
    pick(page, "agent_version", agent_version.agent.slug, str(agent_version))
    pick(page, "dataset_version", dataset_version.dataset.slug, str(dataset_version))
    page.click("#start-run button[name=estimate]")
    page.wait_for_selector(".start-judge-warning")
    warning = page.inner_text(".start-judge-warning")
    assert f"Blocking model checks cannot be scored: {MODEL['label']}." in warning
    assert "SHERLOCK_JUDGE_BASE_URL" in warning
    assert page.get_attribute(".start-judge-warning a", "href").endswith("/docs/judges/")
    shot(page, "runs-start-estimate-no-judge")


def test_the_other_pages_an_admin_and_an_editor_read(no_judge, server, browser, shot):
    """The compare page's verdicts, the labelling queue's empty state, the gate datasets' admin
    page the refusal links to, and a model check's page with its calibration link."""
    builder = factories.user("builder", role="Builder")
    factories.user("admin", role="Admin")
    factories.user("editor", role="Editor")
    qa = evaluated(factories.agent("qa-bot"), "no verifier", builder)
    unscored = evaluated(factories.agent("polite-bot"), "unscored model check", builder)

    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, "builder", "/runs/")
    page.goto(f"{server}/runs/compare/?a={qa.pk}&b={unscored.pk}")
    verdicts = page.inner_text("#verdicts")
    assert "A: PASSED" in verdicts and "B: INCOMPLETE" in verdicts
    assert "missing: outcome verification" in verdicts
    row = page.locator("xpath=//table[@id='contract']//tr[td[1][normalize-space()='gate']]")
    cells = row.locator(".status")
    assert [cells.nth(0).inner_text(), cells.nth(1).inner_text()] == [
        "pass",
        "incomplete (blocking checks scored)",
    ]
    assert cells.nth(1).get_attribute("class") == "status skipped"  # as its verdict above
    shot(page, "compare-verdicts")

    editor = browser.new_page(viewport={"width": 1366, "height": 900})
    slug = unscored.dataset_version.dataset.slug
    log_in(editor, server, "editor", f"/labels/?dataset={slug}")
    empty = editor.inner_text("#queue-empty")
    assert "none of the 2 model-check results has a verdict" in empty
    assert "SHERLOCK_JUDGE_BASE_URL" in editor.inner_text("#queue-no-judge")
    shot(editor, "labels-empty-no-verdict")
    check = unscored.dataset_version.checks.get(kind="custom")
    editor.goto(f"{server}/admin/evaluations/check/{check.pk}/change/")
    editor.click(f"a[href='/checks/{check.pk}/calibration/']")
    editor.wait_for_url(f"{server}/checks/{check.pk}/calibration/")
    shot(editor, "calibration-from-the-check")

    admin = browser.new_page(viewport={"width": 1366, "height": 900})
    agent = qa.agent_version.agent
    log_in(admin, server, "admin", f"/admin/governance/gatedataset/add/?agent={agent.pk}")
    admin.wait_for_selector("#gatedataset_form")
    shot(admin, "gate-datasets-add")
