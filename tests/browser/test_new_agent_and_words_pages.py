"""In chromium: a Builder adds a version from the agent's page, picks the agent from
the autocomplete and fills the http adapter's own fields (a bad URL is told on its field);
an Editor freezes a draft from its page after a confirmation naming what becomes read-only; an
Admin reads the audit log at 1366 px with sign-ins apart; an outsider's empty runs and costs
say why; the favicon answers. Screenshots: `agent-add-version`, `version-http-error`,
`freeze-confirm`, `draft-frozen`, `audit-1366`, `outsider-runs`, `outsider-costs`.
"""

import pytest

from agents.models import AgentVersion
from evaluations.models import DatasetVersion
from sherlock.core.audit import audit
from tests.support import factories
from tests.support.browser import log_in

pytestmark = [pytest.mark.slow]

GOOD = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}


def no_horizontal_overflow(page):
    return page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def test_a_builder_adds_an_http_version_from_the_agents_page(server, browser, shot, live_db):
    factories.user("builder", role="Builder")
    agent = factories.agent("billing-bot", name="Billing bot")
    factories.agent("support-bot", name="Support bot")
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, "builder", next_url=f"/admin/agents/agent/{agent.pk}/change/")
    page.wait_for_selector("#add-version")
    shot(page, "agent-add-version")
    page.click("#add-version")
    page.wait_for_selector("#id_adapter")
    # The agent is preselected; the autocomplete still finds another by its name.
    assert "billing-bot" in page.inner_text(".field-agent .select2-selection")
    page.click(".field-agent .select2-selection")
    page.fill(".select2-search__field", "support")
    page.click(".select2-results__option >> text=support-bot")
    assert "support-bot" in page.inner_text(".field-agent .select2-selection")
    page.click(".field-agent .select2-selection")
    page.fill(".select2-search__field", "billing")
    page.click(".select2-results__option >> text=billing-bot")

    page.select_option("#id_adapter", "http")
    assert page.is_visible("fieldset.adapter-http")
    assert not page.is_visible("fieldset.adapter-openai_chat")
    assert "Where each case is POSTed as JSON" in page.inner_text("fieldset.adapter-http")
    page.fill("#id_http__url", "ftp://billing.internal/agent")
    page.fill("#id_http__timeout", "0")
    page.click("input[name=_save]")
    page.wait_for_selector(".errorlist")
    assert "must start with http:// or https://" in page.inner_text(".field-http__url")
    assert "must be more than 0" in page.inner_text(".field-http__timeout")
    assert page.input_value("#id_http__url") == "ftp://billing.internal/agent"  # input kept
    shot(page, "version-http-error")

    page.fill("#id_http__url", "http://127.0.0.1:9/agent")
    page.fill("#id_http__timeout", "5")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    version = AgentVersion.objects.get(agent=agent)
    assert version.adapter == "http"
    assert version.config == {"url": "http://127.0.0.1:9/agent", "timeout": 5.0}


def test_an_editor_freezes_a_draft_after_reading_what_becomes_read_only(
    server, browser, shot, live_db
):
    factories.user("editor", role="Editor")
    draft = factories.dataset_version(
        factories.dataset("refunds"),
        cases=[("over-limit", "Refund 300", {}), ("under-limit", "Refund 20", {})],
        checks=[GOOD],
        frozen=False,
    )
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, "editor", next_url=f"/admin/evaluations/datasetversion/{draft.pk}/change/")
    page.click("#freeze-link")
    page.wait_for_selector("#freeze-plan")
    plan = page.inner_text("#freeze-plan")
    assert "2 cases become read-only" in plan and "over-limit, under-limit" in plan
    assert "1 check become read-only" in plan or "1 check becomes read-only" in plan
    assert not DatasetVersion.objects.get(pk=draft.pk).is_frozen
    page.fill("#id_note", "Reviewed with QA on Monday.")
    shot(page, "freeze-confirm")
    page.click("input[name=confirm]")
    page.wait_for_selector(".messagelist .success")
    assert "refunds v1: frozen." in page.inner_text(".messagelist")
    assert "is frozen" in page.inner_text(".frozen-banner")
    shot(page, "draft-frozen")
    draft.refresh_from_db()
    assert draft.is_frozen and draft.note == "Reviewed with QA on Monday."


def test_the_audit_page_fits_1366_px_with_sign_ins_apart(server, browser, shot, live_db):
    admin = factories.user("admin", role="Admin")
    for _ in range(12):
        audit("auth.user.login", actor=admin, target=admin)
    audit(
        "governance.policy.update",
        actor=admin,
        target=("governance.publishingpolicy", 1, "Default policy for every agent"),
        before={"min_case_pass_rate": 0.9, "gate_datasets": ["support-basics", "billing-qa"]},
        after={"min_case_pass_rate": 0.95, "gate_datasets": ["support-basics-long-name-v2"]},
        reason="a stricter gate for the billing agents after the incident of last week",
    )
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, "admin", next_url="/governance/audit/")
    page.wait_for_selector("#audit-entries")
    table = page.inner_text("#audit-entries")
    assert "governance.policy.update" in table and "auth.user.login" not in table
    assert "auth.user.login" in page.inner_text("#sign-ins")
    assert no_horizontal_overflow(page)
    shot(page, "audit-1366")
    page.click("#show-sign-ins")
    page.wait_for_url("**sign_ins=show**")
    assert "auth.user.login" in page.inner_text("#audit-entries")
    assert no_horizontal_overflow(page)


def test_an_outsiders_empty_pages_say_it_is_their_roles(server, browser, shot, live_db):
    factories.user("admin", role="Admin")
    factories.user("outsider")
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    log_in(page, server, "outsider", next_url="/runs/")
    page.wait_for_selector("#no-runs")
    text = page.inner_text("#no-runs")
    assert "You see no runs because your roles cover no agent" in text and "(admin)" in text
    shot(page, "outsider-runs")
    page.goto(f"{server}/costs/")
    assert "You see no costs because your roles cover no agent" in page.inner_text("#no-costs")
    shot(page, "outsider-costs")
    icon = page.request.get(f"{server}/favicon.ico")
    assert icon.status == 200 and "svg" in icon.headers["content-type"]
    assert page.locator("link[rel=icon]").count() == 1
