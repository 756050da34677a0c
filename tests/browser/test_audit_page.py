"""The audit review page in chromium: an Admin opens Audit from the
navigation, filters the log by action code, reads an entry's diff, verifies the chain (intact),
exports the filtered view; then someone rewrites a row behind the trigger's back and the page's
Verify names it; and a tail cut behind the trigger's back, which the chain cannot see, named by
the signed checkpoints. Screenshots: `audit-filtered`, `audit-broken`, `audit-cut-tail`.
"""

from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from sherlock.core.audit import audit, request_context
from tests.support import factories
from tests.support.audit import cut_tail, drop_audit_trigger, use_checkpoints
from tests.support.browser import log_in

pytestmark = [pytest.mark.slow]


def test_an_admin_filters_the_audit_log_and_verifies_the_chain(server, browser, shot, live_db):
    admin = factories.user("admin", role="Admin")
    with request_context(request_id="req-browser", ip="10.0.0.9"):
        policy = audit(
            "governance.policy.update",
            actor=admin,
            target=("governance.publishingpolicy", 1, "Default"),
            before={"repetitions": 1, "min_case_pass_rate": 0.9},
            after={"repetitions": 3, "min_case_pass_rate": 0.9},
            reason="three repetitions for the gate",
        )
    audit("agents.version.publish", actor=admin, after={"state": "published"})

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "admin", next_url="/runs/")
    page.wait_for_selector("h1 >> text=Runs")
    page.click("header >> text=Audit")
    page.wait_for_selector("h1 >> text=Audit log")
    assert "agents.version.publish" in page.inner_text("#audit-entries")

    page.fill("input[name=action]", "governance.policy")
    page.click("#audit-filters button")
    page.wait_for_url("**action=governance.policy**")
    table = page.inner_text("#audit-entries")
    assert "agents.version.publish" not in table
    assert "repetitions: 1 → 3" in table and "min_case_pass_rate" not in table
    assert "req-browser" in table

    page.click("#audit-verify button")
    page.wait_for_selector("#chain-status")
    assert "intact" in page.inner_text("#chain-status")
    assert page.input_value("input[name=action]") == "governance.policy"  # filters kept
    shot(page, "audit-filtered")

    with page.expect_download() as download:
        page.click("text=JSONL")
    exported = Path(download.value.path()).read_text().splitlines()
    assert len(exported) == 1 and f'"sequence": {policy.sequence}' in exported[0]

    drop_audit_trigger()  # live_db puts it back at teardown
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE governance_auditentry SET reason = 'nothing to see' WHERE sequence = %s",
            [policy.sequence],
        )
    page.click("#audit-verify button")
    page.wait_for_selector("#chain-status.fail")
    status = page.inner_text("#chain-status")
    assert f"broken at entry #{policy.sequence}" in status and "hash does not match" in status
    shot(page, "audit-broken")


@pytest.fixture
def checkpoints_for_the_server(monkeypatch, settings, tmp_path):
    """The key and the checkpoint file, for this process and (through the environment) for the
    server it starts next."""
    path = use_checkpoints(settings, tmp_path)
    monkeypatch.setenv("SHERLOCK_AUDIT_KEY", settings.SHERLOCK_AUDIT_KEY)
    monkeypatch.setenv("SHERLOCK_AUDIT_CHECKPOINT_FILE", str(path))
    return path


def test_verify_shows_a_cut_tail_the_chain_cannot_see(
    checkpoints_for_the_server, live_db, server, browser, shot
):
    admin = factories.user("admin", role="Admin")
    kept = audit("governance.policy.update", actor=admin, after={"repetitions": 3})
    cut = audit("agents.version.publish", actor=admin, after={"state": "published"})
    call_command("audit_checkpoint")

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "admin", next_url="/governance/audit/")
    page.wait_for_selector("h1 >> text=Audit log")
    page.click("#audit-verify button")
    page.wait_for_selector("#checkpoint-status.pass")
    assert "checkpoints verified: 1" in page.inner_text("#checkpoint-status")

    drop_audit_trigger()  # live_db puts it back at teardown
    cut_tail(cut.sequence)
    page.click("#audit-verify button")
    page.wait_for_selector("#checkpoint-status.fail")
    assert "intact" in page.inner_text("#chain-status")  # the chain alone sees nothing
    problems = page.inner_text("#checkpoint-problems")
    assert f"entry #{cut.sequence} missing: the log ends at #{kept.sequence}" in problems
    shot(page, "audit-cut-tail")
