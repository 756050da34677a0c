"""Label three model-check results by keyboard and open the calibration page, in chromium.

An Editor opens Labels from the navigation, labels the three most instructive results with
`f` Enter, `p` Enter and `7` Enter (a score of 0.7), sees each next item swapped in by htmx,
then follows the item's link to the check's calibration page: three labels, kappa and its
interval, two disagreements linking to their trials. Screenshots: `labels-queue`,
`labels-calibration` (SHERLOCK_SCREENSHOTS keeps them).
"""

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from evaluations.models import HumanLabel
from tests.support import factories
from tests.support.browser import log_in
from tests.support.labels import run_to_label

pytestmark = [pytest.mark.slow]


def test_an_editor_labels_three_results_by_keyboard_and_reads_the_calibration(
    server, browser, shot, live_db
):
    check, made = run_to_label(
        [
            ("a-far", "passed", 1.0, "", False),
            ("b-near", "failed", 0.45, "", False),
            ("c-flaky", "passed", 0.9, "", True),
            ("d-false-pass", "passed", 1.0, "failed", False),
            ("e-skipped", "skipped", None, "", False),
        ]
    )
    editor = factories.user("editor", role="Editor")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "editor", next_url="/runs/")
    page.wait_for_selector("h1 >> text=Runs")
    page.click("header >> text=Labels")
    page.wait_for_selector("#label-form")
    assert "judge on d-false-pass" in page.inner_text("#label-item")
    assert "the judge passed it but the outcome verifier failed" in page.inner_text("#label-item")
    shot(page, "labels-queue")

    # Keys typed in the dataset's picker are its own: typing the slug and Enter there choose a
    # dataset (the page reloads on it), never a verdict nor a submitted label.
    slug = check.dataset_version.dataset.slug
    page.click("#id_dataset + .select2 .select2-selection")
    page.keyboard.type(slug)
    # The filtered list is fetched 250 ms after the last key, and a list fetched before it may
    # still be on screen: Enter once the slug's option is highlighted and the picker's last
    # search has had its time.
    page.wait_for_selector(f".select2-results__option--highlighted >> text={slug}")
    page.wait_for_timeout(400)
    page.keyboard.press("Enter")
    try:
        page.wait_for_url(f"**dataset={slug}**", timeout=10_000)
    except PlaywrightTimeout:
        # Under two busy workers Enter is sometimes lost while select2 swaps its list; what
        # matters here is that no key typed in the picker labelled anything (asserted below):
        # the row is then chosen with the mouse.
        if page.locator(".select2-container--open").count() == 0:
            page.click("#id_dataset + .select2 .select2-selection")
            page.keyboard.type(slug)
        page.click(f".select2-results__option >> text={slug}")
        page.wait_for_url(f"**dataset={slug}**")
    page.wait_for_selector("#label-form")
    assert not HumanLabel.objects.exists()

    for key, expected_next in (("f", "c-flaky"), ("p", "b-near"), ("7", "a-far")):
        page.keyboard.press(key)
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#label-item >> text=judge on {expected_next}")
    labels = {
        label.check_result.trial.case_version.case.key: (label.passed, label.score)
        for label in HumanLabel.objects.filter(labeled_by=editor).select_related(
            "check_result__trial__case_version__case"
        )
    }
    assert labels == {
        "d-false-pass": (False, None),
        "c-flaky": (True, None),
        "b-near": (None, 0.7),
    }

    page.click("text=calibration of Complete")
    page.wait_for_selector("#confusion")
    assert page.inner_text("#n") == "3"
    assert page.inner_text("#kappa95") != "—"
    assert "2 disagreements" in page.inner_text("#disagreements")  # d and b (0.7 vs 0.45)
    shot(page, "labels-calibration")
    assert "does not require calibration" not in page.inner_text("#verdict")
    check.requires_calibration = False
    check.save(update_fields=["requires_calibration"])
    page.reload()
    verdict = page.inner_text("#verdict")
    assert "it is not marked “requires calibration”" in verdict  # the reason, not the mode
    check.requires_calibration = True
    check.save(update_fields=["requires_calibration"])
    page.reload()
    page.click(
        f"#labels >> a[href^='/runs/{made['d-false-pass'].trial.run_id}/cases/d-false-pass/']"
    )
    page.wait_for_selector("h1 >> text=Case d-false-pass")
