"""A gate decided on the interval, in chromium, on the demo (`seed_demo`): `help-answerer`
passes 27 of its 30 cases, 0.90 against a minimum of 0.85, and its policy decides on the
interval. A Builder reads "insufficient evidence" on the run list and the run page, with what
the interval means and how many cases would decide it; an Admin reads it on the publish page,
with the bypass named for what it is, and sets the policy's choice in the admin. And
`support-bot` v2, paired with the live v1: the publish page and the compare page show first
the refund cases that passed only on v1, each linking to both runs' case pages. Screenshots:
`interval-run-list`, `interval-run`, `interval-publish`, `interval-policy-admin`,
`paired-publish`, `paired-compare`."""

import io

import pytest
from django.core.management import call_command

from governance.models import PublishingPolicy, PublishRequest
from tests.support import factories
from tests.support.browser import log_in

pytestmark = [pytest.mark.slow]


@pytest.fixture
def demo(live_db, settings, tmp_path):
    from django.contrib.auth import get_user_model

    settings.SHERLOCK_DEMO_LEDGER = str(tmp_path / "ledger.jsonl")
    call_command("seed_demo", stdout=io.StringIO())
    for user in get_user_model().objects.all():  # the suite's password, for log_in
        user.set_password(factories.PASSWORD)
        user.save()
    return PublishRequest.objects.get(agent_version__agent__slug="help-answerer")


def test_a_builder_and_an_admin_read_insufficient_evidence(server, browser, shot, demo):
    (run,) = demo.runs.all()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "builder", next_url="/runs/")
    row = page.locator(f"tr:has(a[href='/runs/{run.pk}/'])")
    assert "INSUFFICIENT EVIDENCE" in row.inner_text()
    assert "~333 more cases would most likely decide it" in row.inner_text()
    shot(page, "interval-run-list")

    page.goto(f"{server}/runs/{run.pk}/")
    verdict = page.locator("#verdict")
    assert verdict.get_attribute("data-outcome") == "insufficient"
    text = verdict.inner_text()
    assert "INSUFFICIENT EVIDENCE" in text and "27/30 cases, 0.900" in text
    assert "95% interval 0.744–0.965 straddles 0.85" in text
    assert "more evidence (the reason above says which) would decide it" in page.inner_text(
        "#interval-meaning"
    )
    assert page.locator("#gate-fixes li[data-code='case_pass_rate']").count() == 1
    shot(page, "interval-run")

    admin = browser.new_page(viewport={"width": 1280, "height": 1000})
    log_in(admin, server, "admin", next_url=f"/governance/versions/{demo.agent_version_id}/")
    release = admin.locator("#release")
    assert release.get_attribute("data-outcome") == "insufficient"
    assert "insufficient evidence" in release.inner_text()
    assert "has insufficient evidence at case pass rate" in admin.inner_text("main")
    assert admin.locator("#bypass-insufficient").count() == 1
    shot(admin, "interval-publish")

    policy = PublishingPolicy.objects.get(agent=demo.agent_version.agent)
    admin.goto(f"{server}/admin/governance/publishingpolicy/{policy.pk}/change/")
    field = admin.locator("#id_case_pass_rate_decides_on")
    assert field.input_value() == "interval"
    assert admin.locator("#id_case_pass_rate_confidence").input_value() == "0.95"
    field.scroll_into_view_if_needed()
    shot(admin, "interval-policy-admin")


def test_the_discordant_cases_come_first_linking_both_runs(server, browser, shot, demo):
    fast = PublishRequest.objects.get(
        agent_version__agent__slug="support-bot", agent_version__config__kwargs__style="fast"
    )
    (run,) = fast.runs.all()
    (live,) = fast.live_runs.all()
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    log_in(page, server, "builder", next_url=f"/governance/versions/{fast.agent_version_id}/")
    rows = page.locator("#discordant tr[data-key]")
    assert [rows.nth(i).get_attribute("data-key") for i in range(rows.count())] == [
        "refund-json",
        "refund-small",
    ]
    assert "2 passed only on live" in page.inner_text("#discordant")
    shot(page, "paired-publish")
    page.click(
        f"#discordant tr[data-key='refund-small'] a[href='/runs/{live.pk}/cases/refund-small/']"
    )
    page.wait_for_url(f"**/runs/{live.pk}/cases/refund-small/")

    page.goto(f"{server}/runs/compare/?a={live.pk}&b={run.pk}")
    paired = page.inner_text("#paired")
    assert "Paired on the 12 cases" in paired and "McNemar" in paired
    assert page.locator(f"#changes a[href='/runs/{run.pk}/cases/refund-small/']").count() == 1
    shot(page, "paired-compare")
