"""The publish page in chromium, as a Builder, an Admin and a Publisher use it: asking again
for a passed version shows what it costs before it runs; a refused bypass reason stays in its
field with the reason under it; publishing names the bypass it uses and retiring the live
version warns, both confirmed in a second step that works without JavaScript; the checklist
polled while the gate runs brings the buttons of the decision without a reload.

Screenshots: `publish-ask-again`, `publish-asked-again`, `publish-bypass-refused`,
`publish-uses-bypass`, `publish-confirm`, `publish-retire-confirm`, `publish-polled`,
`publish-incomplete-gate`, `publish-attested`. The page server signs its releases with a key
of the test's own (docs/attestations.md)."""

import json
import os

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django_q.conf import Conf

from agents.choices import VersionState
from governance.actions.request_bypass import RequestBypass
from governance.actions.request_publication import RequestPublication
from governance.attestations.keys import private_pem, public_pem
from governance.choices import BypassState, RequestState
from governance.models import Attestation, GateDataset, PublishingPolicy, PublishRequest
from tests.support import factories
from tests.support.browser import log_in
from tests.support.governance import (
    REASON,
    TOOLS_CHECK,
    finish_gate_runs,
    make_version,
    tool_case,
)

pytestmark = [pytest.mark.slow]

CASES = [tool_case("shipping", "How long is shipping?"), tool_case("refund", "Refund?")]


@pytest.fixture
def signing_key(tmp_path):
    key = Ed25519PrivateKey.generate()
    path = tmp_path / "attestation-key.pem"
    path.write_bytes(private_pem(key))
    os.chmod(path, 0o600)
    return key, path


@pytest.fixture
def server_env(signing_key):
    return {"SHERLOCK_ATTESTATION_KEY_FILE": str(signing_key[1])}


@pytest.fixture
def world(live_db):
    """A gate dataset and a policy, an agent and its author, and the roles of the page."""
    dataset = factories.dataset("gate-basics")
    factories.dataset_version(dataset, cases=CASES, checks=[TOOLS_CHECK])
    PublishingPolicy.objects.create(name="Default", repetitions=1, min_case_pass_rate=1.0)
    agent = factories.agent("support-bot")
    GateDataset.objects.create(agent=agent, dataset=dataset)  # chosen for it
    return {
        "dataset": dataset,
        "agent": agent,
        "author": factories.user("author", role="Builder"),
        "publisher": factories.user("publisher", role="Publisher"),
        "admin": factories.user("admin", role="Admin"),
    }


def requested(version, user):
    """Publication requested with nobody running the gate runs (the test finishes them)."""
    Conf.SYNC = False
    try:
        return RequestPublication(acting_user=user, agent_version=version).execute()
    finally:
        Conf.SYNC = True


def decided(world, good=True):
    version = make_version(world["agent"], world["author"], good=good)
    return finish_gate_runs(requested(version, world["author"]), passed=good)


def open_page(browser, server, username, version, javascript=True):
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, java_script_enabled=javascript
    )
    page = context.new_page()
    log_in(page, server, username, next_url=f"/governance/versions/{version.pk}/")
    page.wait_for_selector("h2 >> text=Actions")
    return page


def test_asking_again_for_a_passed_version_shows_its_cost_first(server, browser, shot, world):
    passed = decided(world)
    version = passed.agent_version
    newer = factories.dataset_version(world["dataset"], cases=CASES, checks=[TOOLS_CHECK])

    page = open_page(browser, server, "author", version)
    assert f"Request #{passed.pk} passed; it waits for a Publisher." in page.inner_text("main")
    assert page.locator("button", has_text="Request publication").inner_text() == (
        "Request publication again…"
    )
    page.click("text=Request publication again…")
    confirm = page.locator("#confirm")
    confirm.wait_for()
    text = confirm.inner_text()
    assert f"It supersedes publish request #{passed.pk} (passed)" in text
    row = page.inner_text("#confirm-runs tbody tr")
    assert str(newer) in row and "newer" in row and "gate-basics v1" in row
    assert page.inner_text("#confirm-total").startswith("$")
    shot(page, "publish-ask-again")
    assert PublishRequest.objects.filter(agent_version=version).count() == 1

    page.click("text=Cancel")
    page.wait_for_selector("text=Request publication again…")
    assert PublishRequest.objects.filter(agent_version=version).count() == 1

    page.click("text=Request publication again…")
    page.click(f"text=Yes, supersede request #{passed.pk} and run the gate again")
    page.wait_for_selector("text=Evaluating…")
    shot(page, "publish-asked-again")
    passed.refresh_from_db()
    assert passed.state == RequestState.SUPERSEDED
    again = PublishRequest.objects.get(agent_version=version, state=RequestState.EVALUATING)
    assert [run.dataset_version_id for run in again.runs.all()] == [newer.pk]


def test_a_refused_bypass_reason_stays_in_its_field_with_the_reason_under_it(
    server, browser, shot, world
):
    blocked = decided(world, good=False)
    page = open_page(browser, server, "admin", blocked.agent_version)
    page.fill("textarea[name=reason]", "too short")
    page.click("text=Request bypass")
    error = page.locator("#bypass-reason-error")
    error.wait_for()
    assert error.inner_text() == "A reason of at least 30 characters is required."
    assert page.input_value("textarea[name=reason]") == "too short"
    field, below = page.locator("textarea[name=reason]").bounding_box(), error.bounding_box()
    assert below["y"] >= field["y"] + field["height"]  # under the field, not at the top
    assert page.locator("main > p.status").count() == 0  # no message at the top of the page
    shot(page, "publish-bypass-refused")
    assert not blocked.bypasses.exists()


def test_publishing_with_a_bypass_and_retiring_are_confirmed_without_javascript(
    server, browser, shot, world
):
    blocked = decided(world, good=False)
    bypass = RequestBypass(
        acting_user=world["admin"], publish_request=blocked, reason=REASON
    ).execute()
    version = blocked.agent_version

    page = open_page(browser, server, "publisher", version, javascript=False)
    relies = page.inner_text("#verb-publish .relies")
    assert relies == f"Publish — uses bypass #{bypass.pk} approved by admin: {REASON}"
    shot(page, "publish-uses-bypass")
    page.fill("#verb-publish input[name=reason]", "incident fix")
    page.click("text=Publish…")
    page.locator("#confirm").wait_for()
    assert f"Bypass #{bypass.pk} is used up" in page.inner_text("#confirm")
    shot(page, "publish-confirm")
    version.refresh_from_db()
    assert version.state == VersionState.DRAFT

    page.click(f"text=Yes, publish {version}")
    page.wait_for_selector("text=Retire…")
    version.refresh_from_db()
    bypass.refresh_from_db()
    assert version.state == VersionState.PUBLISHED and bypass.state == BypassState.USED

    page.click("text=Retire…")
    page.locator("#confirm").wait_for()
    assert "support-bot then has no live version" in page.inner_text("#confirm")
    shot(page, "publish-retire-confirm")
    version.refresh_from_db()
    assert version.state == VersionState.PUBLISHED

    page.click(f"text=Yes, retire {version}")
    page.wait_for_selector("text=retired.")
    version.refresh_from_db()
    assert version.state == VersionState.RETIRED
    assert version.agent.live_version_id is None


def test_the_buttons_of_the_decision_appear_when_the_polled_gate_decides(
    server, browser, shot, world
):
    version = make_version(world["agent"], world["author"])
    request = requested(version, world["author"])
    page = open_page(browser, server, "publisher", version)
    page.wait_for_selector("text=Evaluating…")
    assert page.locator("text=Publish…").count() == 0

    finish_gate_runs(request)
    page.wait_for_selector("text=Publish…", timeout=15000)  # no reload: the poll brought it
    assert f"Publish — gate passed, request #{request.pk}" in page.inner_text("main")
    shot(page, "publish-polled")


def test_an_incomplete_gate_reads_incomplete_and_offers_running_it_again_first(
    server, browser, shot, world
):
    """The agent raised in one gate trial: the page says incomplete (never "fail"), names the
    agent and its error with what to do, offers running the gate again before any bypass, and
    the bypass form says what it bypasses. Screenshot: `publish-incomplete-gate`."""
    version = make_version(world["agent"], world["author"])
    finish_gate_runs(requested(version, world["author"]), errored=1)

    page = open_page(browser, server, "admin", version)
    release = page.locator("#release")
    assert release.get_attribute("data-outcome") == "incomplete"
    text = release.inner_text()
    assert text.startswith("Release: incomplete")
    assert "the agent (python tests.support.agents_under_test.echo) did not answer" in text
    assert "run the gate again" in text
    main = page.locator("main").inner_text()
    assert main.index("Request publication again") < main.index("Bypass the incomplete decision")
    assert "the first step for an incomplete gate" in page.locator(".verbs").inner_text()
    shot(page, "publish-incomplete-gate")


def test_a_publication_is_signed_and_its_attestation_downloaded_from_the_page(
    server, browser, shot, world, signing_key, tmp_path
):
    version = decided(world).agent_version
    page = open_page(browser, server, "publisher", version, javascript=False)
    assert page.locator("h2 >> text=Attestations").count() == 0
    page.click("text=Publish…")
    page.locator("#confirm").wait_for()
    page.click(f"text=Yes, publish {version}")
    page.wait_for_selector("h2 >> text=Attestations")
    attestation = Attestation.objects.get(agent_version=version)
    row = page.locator("table", has=page.locator("th >> text=event")).last
    assert "published" in row.inner_text() and attestation.keyid[:16] in row.inner_text()
    shot(page, "publish-attested")
    with page.expect_download() as download:
        page.click("text=download")
    saved = tmp_path / "release.intoto.json"
    download.value.save_as(saved)
    assert json.loads(saved.read_text()) == attestation.envelope
    # What the page links as the public keys is the key the server signed with.
    keys = page.request.get(f"{server}/.well-known/sherlock/attestation-keys.json").json()
    assert keys["keys"][0]["public_key"] == public_pem(signing_key[0].public_key())
