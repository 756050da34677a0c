"""From a failed cell to its reason, in a real browser (chromium through Playwright).

A Builder opens a finished run, sees it read FAILED with the contract table on top, clicks the
failed cell and reads the check's reason on the trial page; the demo's fast refund agent reads
FAILED although its cases pass; a run whose blocking checks went unscored reads INCOMPLETE and
says so in a banner.
Set SHERLOCK_SCREENSHOTS to a directory to keep a screenshot of each page (conftest.py).
"""

import io

import pytest
from django.core.management import call_command

from evaluations.actions.start_run import StartRun
from evaluations.choices import CheckStatus
from evaluations.models import CheckResult, Run
from tests.support import factories
from tests.support.browser import log_in
from tests.support.contract_runs import refinish

pytestmark = [pytest.mark.slow]


def flaky_run(builder):
    version = factories.agent_version(callable_path="tests.support.agents_under_test.flaky")
    dataset_version = factories.dataset_version(
        cases=[
            ("alternating", "Where is my order?", {"expected_tools": [{"name": "kb.search"}]}),
            ("greeting", "hello", {"expected_tools": []}),
        ],
        checks=[{"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}],
    )
    return StartRun(
        acting_user=builder, agent_version=version, dataset_version=dataset_version, repetitions=2
    ).execute()


def test_a_person_clicks_a_failed_cell_and_reads_the_reason(server, browser, shot):
    builder = factories.user("builder", role="Builder")
    run = flaky_run(builder)
    run.refresh_from_db()
    assert run.status == "completed"
    failed = CheckResult.objects.get(
        trial__run=run, trial__case__key="alternating", status=CheckStatus.FAILED
    )

    page = browser.new_page()
    log_in(page, server, "builder", f"/runs/{run.pk}/")
    assert "FAILED" in page.inner_text("#verdict")
    assert "false success" in page.inner_text("#contract")
    shot(page, "run-page-failed-case")

    page.click("#results tr:has-text('alternating') a.cell[href$='#check-tools']")
    page.wait_for_selector("#check-tools")
    assert "/cases/alternating/" in page.url
    check = page.inner_text("#check-tools")
    assert failed.reason in check and "failed" in check and "threshold" in check
    assert f"{failed.trial.repetition} ·" in page.inner_text("#repetitions .current")
    shot(page, "trial-page-failed-check")

    # The grid's failed filter, through htmx: only the failing case is left.
    page.goto(f"{server}/runs/{run.pk}/")
    page.click(".filters a:text-is('failed')")
    page.wait_for_function("!document.querySelector('#results').innerText.includes('greeting')")
    assert "show=failed" in page.url and "alternating" in page.inner_text("#results")


def test_the_run_pages_tell_passing_failing_contract_and_unscored_runs_apart(
    server, browser, shot, settings, tmp_path
):
    settings.SHERLOCK_DEMO_LEDGER = str(tmp_path / "ledger.jsonl")
    call_command("seed_demo", stdout=io.StringIO())
    refund = Run.objects.filter(agent_version__agent__slug="refund-agent")
    stable = refund.get(agent_version__config__kwargs__style="stable")
    fast = refund.get(agent_version__config__kwargs__style="fast")

    page = browser.new_page()
    # seed_demo's own logins ("sherlock-<user>"), as the README's tour signs in.
    page.goto(f"{server}/admin/login/?next=/runs/{fast.pk}/")
    page.fill("#id_username", "builder")
    page.fill("#id_password", "sherlock-builder")
    page.click("input[type=submit]")
    verdict = page.inner_text("#verdict")
    assert "FAILED" in verdict and "false success" in verdict and "cases passed" in verdict
    # The refund agent's own publishing policy, the one its publish gate applies.
    assert "thresholds of policy «Refund desk policy» v1" in page.inner_text("#contract-thresholds")
    shot(page, "run-page-failing-contract")

    page.goto(f"{server}/runs/{stable.pk}/")
    assert "PASSED" in page.inner_text("#verdict")
    shot(page, "run-page-passing")

    blocking = CheckResult.objects.filter(trial__run=stable, blocking=True)
    assert blocking.exists()
    CheckResult.objects.filter(pk__in=list(blocking.values_list("pk", flat=True)[:3])).update(
        status=CheckStatus.SKIPPED, score=None, reason="no judge is configured (SHERLOCK_JUDGE)"
    )
    refinish(stable)  # the run's figures were computed when it finished
    page.goto(f"{server}/runs/{stable.pk}/")
    banner = page.inner_text("#unscored")
    assert "could not be scored" in banner and "no judge is configured" in banner
    assert "INCOMPLETE" in page.inner_text("#verdict")  # nothing failed; evidence missing
    shot(page, "run-page-unscored-banner")

    # From the failing gate to its reason: the trial whose declared completion failed its
    # outcome check (the $250 credit the tool policy refused).
    false_success = fast.trials.get(declared_complete=True, outcome_verdict="failed")
    page.goto(f"{server}/runs/{fast.pk}/")
    page.click(f"#results a[href='/runs/{fast.pk}/cases/{false_success.case.key}/']")
    page.wait_for_selector("#repetitions")
    main = page.inner_text("main")
    assert "billing.apply_credit" in main and "denied" in main
    assert "declared the task complete" in page.inner_text("#false-success")
    assert "Tool effects" in main
    shot(page, "trial-page-false-success")
