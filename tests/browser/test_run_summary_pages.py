"""The run page's summary button in chromium, on the demo (`seed_demo`, no judge configured):
a Builder opens a finished run and reads why no summary can be written. Screenshot:
`run-summary-unavailable` (SHERLOCK_SCREENSHOTS keeps it)."""

import io

import pytest
from django.core.management import call_command

from evaluations.models import Run

pytestmark = [pytest.mark.slow]


def test_without_a_judge_the_button_says_why(server, browser, shot, live_db, settings, tmp_path):
    settings.SHERLOCK_DEMO_LEDGER = str(tmp_path / "ledger.jsonl")
    call_command("seed_demo", stdout=io.StringIO())
    run = Run.objects.filter(status="completed").first()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/admin/login/?next=/runs/{run.pk}/")
    page.fill("#id_username", "builder")
    page.fill("#id_password", "sherlock-builder")
    page.click("input[type=submit]")
    page.wait_for_selector("#run-summary")
    assert page.locator("#summary-unavailable button").is_disabled()
    assert "No judge is configured" in page.inner_text("#summary-unavailable")
    assert page.locator("#summary-unavailable a >> text=Judge settings").count() == 1
    page.locator("#run-summary").scroll_into_view_if_needed()
    shot(page, "run-summary-unavailable")
