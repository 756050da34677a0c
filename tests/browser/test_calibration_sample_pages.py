"""A calibration sample, in chromium: an Editor switches the labelling queue to "Sample for
calibration", labels by keyboard the results drawn at random until the check has twelve sample
labels, and reads on the calibration page the judge's bias and the pass rate corrected with
PPI++ beside the judge-only and labels-only rates. Screenshots: `labels-sample`,
`calibration-corrected` (SHERLOCK_SCREENSHOTS keeps them)."""

import pytest

from evaluations.choices import LabelSource
from evaluations.models import HumanLabel
from tests.support import factories
from tests.support.browser import log_in
from tests.support.labels import run_to_label

pytestmark = [pytest.mark.slow]


def test_an_editor_labels_a_random_sample_and_reads_the_corrected_rate(
    server, browser, shot, live_db
):
    # The judge passed 30 results, people would fail the 10 with a long key; it failed 10.
    rows = [(f"p{n:02d}", "passed", 0.9, "", False) for n in range(30)]
    rows += [(f"f{n:02d}", "failed", 0.1, "", False) for n in range(10)]
    check, _ = run_to_label(rows)
    factories.user("editor", role="Editor")
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    log_in(page, server, "editor", next_url="/labels/")
    page.click("#sample-mode")
    page.wait_for_selector("#label-item >> text=drawn at random for a calibration sample")
    shot(page, "labels-sample")
    for _ in range(12):
        reason = page.inner_text("#label-item .reason")  # "judge on p07"
        key = reason.split("judge on ")[1]
        people_pass = key.startswith("p") and int(key[1:]) < 20
        page.keyboard.press("p" if people_pass else "f")
        page.keyboard.press("Enter")
        page.wait_for_function(
            "before => document.querySelector('#label-item .reason')?.innerText !== before",
            arg=reason,
        )
    sampled = HumanLabel.objects.filter(source=LabelSource.SAMPLE)
    assert sampled.count() == 12

    page.goto(f"{server}/checks/{check.pk}/calibration/")
    text = page.inner_text("#judge-error")
    assert "12 such labels" in text and "Bias" in text
    assert page.locator("#corrected").count() == 1
    assert "corrected (PPI++)" in page.inner_text("#corrected")
    page.locator("#judge-error").scroll_into_view_if_needed()
    shot(page, "calibration-corrected")
