"""Schedule a run in chromium, on the demo (`seed_demo`): a Builder opens /schedules/, picks
`support-bot` (its live version) on a dataset (its latest frozen version) every 60 minutes, sees
the cost per run and per month, saves, and finds the schedule in the list with its next run,
then pauses it. Screenshots: `schedule-estimate`, `schedules` (SHERLOCK_SCREENSHOTS keeps them).
"""

import io

import pytest
from django.core.management import call_command

from evaluations.models import RunSchedule
from tests.support.browser import pick

pytestmark = [pytest.mark.slow]


@pytest.fixture
def demo(live_db, settings, tmp_path):
    settings.SHERLOCK_DEMO_LEDGER = str(tmp_path / "ledger.jsonl")
    call_command("seed_demo", stdout=io.StringIO())


def sign_in(page, server, username):
    page.goto(f"{server}/admin/login/?next=/schedules/")
    page.fill("#id_username", username)
    page.fill("#id_password", f"sherlock-{username}")
    page.click("input[type=submit]")
    page.wait_for_selector("h1 >> text=Schedules")


def test_a_builder_schedules_a_run_after_seeing_its_estimate(server, browser, shot, demo):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, server, "builder")
    assert "No schedule that you may see." in page.inner_text("#schedules")
    pick(page, "agent", "support", "support-bot")  # typed and picked, not scrolled for
    pick(page, "dataset", "refund", "refund-desk")
    page.fill("#id_interval_minutes", "60")
    page.click("button[name=estimate]")
    page.wait_for_selector("#schedule-estimate")
    cells = page.locator("#schedule-estimate td").all_inner_texts()
    assert cells[3] == "720"  # runs in 30 days, every 60 minutes
    assert cells[2].startswith("$") or "price missing" in cells[2]
    assert cells[5].startswith("$") or "price missing" in cells[5]
    shot(page, "schedule-estimate")
    assert not RunSchedule.objects.exists()  # nothing saved before the estimate is accepted
    page.click("button[name=save]")
    page.wait_for_selector("text=Schedule saved.")
    row = page.inner_text("#schedules tbody tr")
    assert "support-bot" in row and "every 60 min" in row and "none yet" in row
    shot(page, "schedules")
    schedule = RunSchedule.objects.get()
    assert schedule.created_by.username == "builder" and schedule.next_run is not None
    page.click("#schedules button >> text=Pause")
    page.wait_for_selector("text=paused.")
    assert "paused" in page.inner_text("#schedules tbody tr")


def test_a_schedule_above_the_monthly_limit_is_saved_only_once_confirmed(
    server, browser, shot, demo
):
    """Every minute, the demo's support-bot costs thousands of dollars a month, above the
    default SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD (100): the page says so in a warning, refuses
    a save without the box ticked, on the box, and saves once it is. Screenshot:
    `schedule-confirm-cost`."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    sign_in(page, server, "builder")
    pick(page, "agent", "support", "support-bot")  # typed and picked, not scrolled for
    pick(page, "dataset", "refund", "refund-desk")
    page.fill("#id_interval_minutes", "1")
    page.click("button[name=estimate]")
    page.wait_for_selector("#confirm-cost")
    warning = page.inner_text("#confirm-cost")
    assert "a month, more than the $100.00 that needs a confirmation" in warning
    month = page.locator("#schedule-estimate td").all_inner_texts()[5]
    assert month.startswith("$") and "," in month  # "$2,592.00": thousands grouped
    page.click("button[name=save]")
    page.wait_for_selector("#confirm-cost .status.error")
    assert "confirm the cost to save it" in page.inner_text("#confirm-cost")
    assert not RunSchedule.objects.exists()
    shot(page, "schedule-confirm-cost")
    page.check("#id_confirm_cost")
    page.click("button[name=save]")
    page.wait_for_selector("text=Schedule saved.")
    assert RunSchedule.objects.get().interval_minutes == 1


def test_a_client_version_is_refused_on_its_field_with_where_to_schedule_instead(
    server, browser, shot, demo
):
    from agents.models import Agent, AgentVersion

    agent = Agent.objects.get(slug="support-bot")
    AgentVersion.objects.create(
        agent=agent, number=agent.versions.count() + 1, name="abc123", adapter="client", config={}
    )
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, server, "builder")
    # Before an agent is chosen, its version picker asks nothing and says why.
    page.click("#id_agent_version + .select2 .select2-selection")
    page.wait_for_selector(".select2-results__option >> text=Choose the agent first")
    page.keyboard.press("Escape")
    pick(page, "agent", "support", "support-bot")
    pick(page, "agent_version", "abc", "abc123")  # the chosen agent's versions
    pick(page, "dataset", "refund", "refund-desk")
    page.fill("#id_interval_minutes", "60")
    page.click("button[name=estimate]")
    page.wait_for_selector("text=runs on the client")
    body = page.inner_text("main")
    assert "a scheduled run would wait for uploads that nobody sends" in body
    assert "Schedule `sherlock run` in the team's CI instead" in body
    assert page.locator("#schedule-estimate").count() == 0
    shot(page, "schedule-client-version-refused")
    assert not RunSchedule.objects.exists()
