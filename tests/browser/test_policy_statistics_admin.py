"""An Admin sets the statistical rules of a policy in the admin, in chromium: the floors on
their interval, a check gated on its judge-corrected rate, gate runs that stop early. A floor
of 1.0 on the interval is refused as a message on the form, naming the field (never a bare
403), and nothing is saved; a floor of 0.9 saves the policy with all three. Then the labelling
queue's sample of one run, which that gate reads, and the run page's corrected rates.
Screenshots: `policy-statistics-refused`, `policy-statistics-saved`, `labels-sample-of-a-run`,
`run-corrected-rates`."""

import pytest

from governance.models import PublishingPolicy
from tests.support import factories
from tests.support.browser import log_in

pytestmark = [pytest.mark.slow]


def test_an_admin_sets_the_statistical_rules_of_a_policy(server, browser, shot):
    factories.user("admin", role="Admin")
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    log_in(page, server, "admin", next_url="/admin/governance/publishingpolicy/add/")
    page.fill("#id_name", "Statistics")
    page.select_option("#id_floors_decide_on", "interval")
    page.fill("#id_min_useful_progress", "1.0")
    page.fill("#id_corrected_checks", '{"Polite": 0.8}')
    page.check("#id_gate_runs_stop_early")
    page.click("input[name=_save]")
    page.wait_for_selector(".errornote, .errorlist")
    assert "strictly between 0 and 1" in page.inner_text("#content")
    assert not PublishingPolicy.objects.exists()
    page.locator("#id_floors_decide_on").scroll_into_view_if_needed()
    shot(page, "policy-statistics-refused")
    page.fill("#id_min_useful_progress", "0.9")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist")
    policy = PublishingPolicy.objects.get()
    assert policy.floors_decide_on == "interval" and policy.gate_runs_stop_early
    assert policy.corrected_checks == {"Polite": 0.8}
    shot(page, "policy-statistics-saved")


def test_an_editor_labels_the_sample_of_one_run(server, browser, shot):
    from tests.support.labels import run_to_label

    check, made = run_to_label([(f"p{n:02d}", "passed", 0.9, "", False) for n in range(8)])
    run = next(iter(made.values())).trial.run
    factories.user("editor", role="Editor")
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    log_in(page, server, "editor", next_url="/labels/")
    page.goto(f"{server}/labels/?mode=sample&run={run.pk}")
    assert f"run {run.pk}'s results" in page.inner_text("#label-modes")
    reason = page.inner_text("#label-item .reason")
    page.keyboard.press("f")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "before => document.querySelector('#label-item .reason')?.innerText !== before",
        arg=reason,
    )
    labelled = check.results.get(human_labels__isnull=False).human_labels.get()
    assert (labelled.source, labelled.check_result.trial.run_id) == ("sample", run.pk)
    shot(page, "labels-sample-of-a-run")


def test_a_builder_reads_the_corrected_rates_on_the_run_page(server, browser, shot):
    from evaluations.choices import LabelSource
    from evaluations.models import HumanLabel
    from tests.support.labels import run_to_label

    rows = [(f"p{n:02d}", "passed", 0.9, "", False) for n in range(30)]
    check, made = run_to_label(rows)
    run = next(iter(made.values())).trial.run
    run.status = "completed"
    run.save()
    editor = factories.user("editor", role="Editor")
    for n, result in enumerate(list(made.values())[:12]):  # people fail a third of a sample
        HumanLabel.objects.create(
            check_result=result,
            labeled_by=editor,
            passed=n % 3 != 0,
            calibration_key=check.calibration_key,
            source=LabelSource.SAMPLE,
        )
    factories.user("builder", role="Builder")
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    log_in(page, server, "builder", next_url=f"/runs/{run.pk}/")
    row = page.locator("#corrected-rates tr[data-check='Complete']")
    text = row.inner_text()
    assert "1.000" in text and "12" in text and "0.667" in text
    page.locator("#corrected-rates").scroll_into_view_if_needed()
    shot(page, "run-corrected-rates")
