"""Compare two runs and follow a check over time, in chromium, on the demo (`seed_demo`).

A Builder opens the blocked `support-bot` v2 gate run, follows "compare with the live version's
latest run on this dataset" (v1, published through the gate), reads the verdict, the two
contract tables, the regressed cases and the check deltas, then opens Trends from the
navigation. The Publisher reaches the same comparison from the v2 publish page. Screenshots:
`compare-picker`, `run-page-compare-link`, `compare`, `trends`, `publish-page`, `publish-compare`,
`trends-informative`, `compare-refund` (SHERLOCK_SCREENSHOTS keeps them).
"""

import io

import pytest
from django.core.management import call_command

from agents.models import AgentVersion
from evaluations.models import Run
from tests.support.browser import pick

pytestmark = [pytest.mark.slow]


@pytest.fixture
def demo(live_db, settings, tmp_path):
    settings.SHERLOCK_DEMO_LEDGER = str(tmp_path / "ledger.jsonl")
    call_command("seed_demo", stdout=io.StringIO())
    fast = AgentVersion.objects.get(agent__slug="support-bot", config__kwargs__style="fast")
    careful = AgentVersion.objects.get(agent__slug="support-bot", config__kwargs__style="careful")
    return {
        "fast": fast,
        "careful": careful,
        "fast_gate": Run.objects.get(agent_version=fast, purpose="gate"),
        "careful_gate": Run.objects.get(agent_version=careful, purpose="gate"),
    }


def sign_in(page, server, username):
    page.goto(f"{server}/admin/login/?next=/runs/")
    page.fill("#id_username", username)
    page.fill("#id_password", f"sherlock-{username}")
    page.click("input[type=submit]")
    page.wait_for_selector("h1 >> text=Runs")


def test_a_builder_compares_the_candidate_with_live_and_opens_trends(server, browser, shot, demo):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, server, "builder")
    nav = page.inner_text("header")
    for link in ("Runs", "Compare", "Trends", "Costs", "Publish", "Admin", "API", "Log out"):
        assert link in nav
    assert "Audit" not in nav  # a Builder may not read the audit log
    assert "builder" in nav

    page.click("header >> text=Compare")
    # The runs are typed and picked (/pick/run/): the page lists none, the picker offers each.
    assert page.locator("select[name=a] option").count() == 2  # the empty one, the chosen one
    page.click("#id_a + .select2 .select2-selection")
    offered = page.locator(".select2-results__option:not(.loading-results)")
    offered.first.wait_for()
    assert offered.count() == min(Run.objects.count(), 20)
    page.keyboard.press("Escape")
    shot(page, "compare-picker")
    page.click("header >> text=Runs")
    page.click(f"a[href='/runs/{demo['fast_gate'].pk}/']")
    page.wait_for_selector(".compare-link")
    shot(page, "run-page-compare-link")
    page.click("text=Compare with the live version's latest run on this dataset")
    page.wait_for_selector("#contract")
    assert f"a={demo['careful_gate'].pk}&b={demo['fast_gate'].pk}" in page.url
    body = page.inner_text("main")
    assert "comparable" in page.inner_text("#comparability")
    assert "not comparable" not in body
    changes = page.inner_text("#changes")
    assert "regressed" in changes and "refund-small" in changes and "refund-json" in changes
    deltas = page.inner_text("#deltas")
    assert "Expected tools" in deltas and "-0.182" in deltas  # 18/22 results vs 22/22
    contract = page.inner_text("#contract")
    assert "support-bot v1" in contract and "support-bot v2" in contract
    assert "A and B: evaluated with thresholds of policy «Default publishing policy» v1" in (
        page.inner_text("#contract-thresholds")
    )
    shot(page, "compare")

    page.click("header >> text=Trends")
    pick(page, "agent", "support", "support-bot")  # typed and picked from /pick/agent/
    pick(page, "dataset", "basics", "support-basics")
    page.click("text=Show")
    page.wait_for_selector("#trend-table")
    table = page.inner_text("#trend-table")
    assert "v1" in table and "v2" in table and "Expected tools" in table
    assert page.locator("svg.trend polyline").count() >= 2
    shot(page, "trends")

    page.click("header >> text=Log out")
    page.wait_for_load_state()
    assert "Log out" not in page.inner_text("body")


def test_the_publisher_compares_candidate_and_live_from_the_publish_page(
    server, browser, shot, demo
):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, server, "publisher")
    page.goto(f"{server}/governance/versions/{demo['fast'].pk}/")
    assert "Audit" not in page.inner_text("header")
    assert "blocked" in page.inner_text("#gate")
    shot(page, "publish-page")
    page.click("#compare-live a")
    page.wait_for_selector("#contract")
    assert f"b={demo['fast_gate'].pk}" in page.url
    assert "regressed" in page.inner_text("#changes")
    shot(page, "publish-compare")

    # The demo's informative task-quality check is tracked over time too.
    page.goto(f"{server}/trends/?agent=refund-agent&dataset=refund-desk")
    table = page.inner_text("#trend-table")
    assert "Task quality (informative)" in table and "n/a" in table
    shot(page, "trends-informative")
    page.click("text=Compare the first and the last run")  # the demo's stable vs fast
    page.wait_for_selector("#contract")
    assert "fail (false success)" in page.inner_text("#contract")
    assert "«Refund desk policy» v1" in page.inner_text("#contract-thresholds")
    shot(page, "compare-refund")

    admin = browser.new_page()  # a context of its own: another person
    sign_in(admin, server, "admin")
    assert "Audit" in admin.inner_text("header")  # an Admin reads the audit log
    admin.click("header >> text=Audit")
    admin.wait_for_selector("text=governance.version.publish")
