"""Writing cases and checks in the admin, in a real browser (Debian's chromium, Playwright), as an
Editor does it: from the draft version's page, a case with a typed key, a refused save that shows
every error at once, each on its field, with the input kept, then the fixed save; a custom check
written with its criterion and anchors after a preview scored by a (loopback) judge; and a frozen
version that says it is read-only and leads to the dataset's page, whose button starts a draft.

Set SHERLOCK_SCREENSHOTS=/some/dir to keep a screenshot of each page (conftest.py).
"""

import pytest

from evaluations.models import CaseVersion, Check, Dataset
from tests.support import factories
from tests.support.browser import log_in

pytestmark = pytest.mark.slow


@pytest.fixture
def judge_env(llm_server, monkeypatch):
    """The admin server's judge is the loopback LLM server (a custom check's preview calls
    it). Requested before `server`, so runserver starts with this environment."""
    monkeypatch.setenv("SHERLOCK_JUDGE_BASE_URL", llm_server.url)
    monkeypatch.setenv("SHERLOCK_JUDGE_MODEL", "judge-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("SHERLOCK_JUDGE_MAX_RETRIES", "0")


def test_an_editor_writes_a_case_then_a_custom_check_after_a_preview(
    judge_env,
    server,
    browser,
    llm_server,
    shot,
):
    factories.user("editor", role="Editor")
    draft = factories.dataset_version(
        factories.dataset("refunds"),
        cases=[("greeting", "Can I change my plan?", {})],
        frozen=False,
    )
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "editor")
    page.goto(f"{server}/admin/evaluations/datasetversion/{draft.pk}/change/")
    shot(page, "01-draft-version")
    page.click("a.addlink:has-text('Add case')")
    assert page.inner_text("#content h1") == "Add case"

    # A case with a key they type; one save shows every error, each on its field: a key that
    # is not a slug, a tool without a name, an override of no check.
    page.fill("#id_key", "refund over limit")
    page.fill("#id_input", "Refund order 1182, please.")
    page.fill("#id_expected_output", "The refund is refused: over the limit.")
    page.fill("#id_contexts", "Refunds above $200 need a manager.\nOrders ship in 2 days.")
    page.fill("#id_expected_tools", '[{"tool": "refund"}]')
    page.fill("#id_tags", "refunds, limits")
    page.fill("#id_overrides", '{"Nope": {"threshold": 0.5}}')
    shot(page, "02-case-add")
    page.click("input[name=_save]")
    assert "slug" in page.inner_text(".field-key .errorlist")
    error = page.locator(".field-expected_tools .errorlist")
    assert (
        error.inner_text() == "expected_tools[0]: needs a tool name"
        " (a string, or an object with a name)"
    )
    overrides = page.inner_text(".field-overrides .errorlist")
    assert overrides == "overrides.Nope: no check with this label"
    assert page.input_value("#id_key") == "refund over limit"  # the input is kept
    assert page.input_value("#id_input") == "Refund order 1182, please."
    assert not CaseVersion.objects.filter(dataset_version=draft).exclude(case__key="greeting")
    shot(page, "03-case-add-refused")

    page.fill("#id_key", "refund-over-limit")
    page.fill("#id_expected_tools", '[{"name": "refund", "arguments": {"order": 1182}}]')
    page.fill("#id_overrides", "")
    page.click("input[name=_continue]")
    assert "was added successfully" in page.inner_text(".messagelist")
    cv = CaseVersion.objects.get(dataset_version=draft, case__key="refund-over-limit")
    assert cv.contexts == ["Refunds above $200 need a manager.", "Orders ship in 2 days."]
    assert cv.tags == ["refunds", "limits"]
    shot(page, "04-case-change")

    # A custom check: its own fields appear with the kind; the preview scores it first.
    page.goto(f"{server}/admin/evaluations/datasetversion/{draft.pk}/change/")
    page.click("a.addlink:has-text('Add check')")
    page.wait_for_url("**/admin/evaluations/check/add/**")
    from playwright.sync_api import expect  # the browser fixture has made sure it is there

    # The page's script hides the custom fields once it has run: wait for it, not a snapshot.
    expect(page.locator("fieldset.custom-check")).to_be_hidden()
    page.select_option("#id_kind", "latency")
    assert page.locator(".kind-param-table[data-kind=latency]").is_visible()
    assert "max_ms" in page.inner_text(".kind-param-table[data-kind=latency]")
    shot(page, "05-check-add-params")
    page.select_option("#id_kind", "custom")
    assert page.locator("fieldset.custom-check").is_visible()
    assert page.locator(".kind-param-table[data-kind=latency]").is_hidden()
    page.fill("#id_label", "House terms")
    page.fill("#id_criterion", "Says 'member', never 'user'. Ends with a next step.")
    page.fill("#id_anchor_0", "says 'user', or no next step")
    page.fill("#id_anchor_1", "says 'member' throughout and ends with a next step")
    page.fill("#id_threshold", "1")
    page.fill("#id_preview_case", "greeting")
    page.fill("#id_preview_transcript", "Yes, every member can change plan. Send us the form.")
    llm_server.script(
        [
            {
                "quotes": ["every member can change plan", "Send us the form."],
                "reason": "Says member and ends with a next step.",
                "score": 1,
            }
        ]
    )
    page.click("#preview-button")
    page.wait_for_selector(".preview-status")
    assert "passed" in page.inner_text(".preview-status")
    assert "score 1.000" in page.inner_text(".preview-status")
    assert not Check.objects.filter(label="House terms").exists()  # a preview saves nothing
    shot(page, "06-check-preview")
    page.click("input[name=_continue]")
    assert "was added successfully" in page.inner_text(".messagelist")
    check = Check.objects.get(dataset_version=draft, label="House terms")
    assert check.params["anchors"] == {
        "0": "says 'user', or no next step",
        "1": "says 'member' throughout and ends with a next step",
    }
    assert page.input_value("#id_criterion").startswith("Says 'member'")
    shot(page, "07-check-change")


def test_a_frozen_version_says_it_is_read_only(server, browser, shot):
    factories.user("editor", role="Editor")
    frozen = factories.dataset_version(
        factories.dataset("refunds"),
        cases=[("greeting", "Can I change my plan?", {"tags": ["smoke"]})],
        checks=[{"label": "Shape", "kind": "output_type", "params": {"type": "text"}}],
    )
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server, "editor")
    page.goto(f"{server}/admin/evaluations/datasetversion/{frozen.pk}/change/")
    shot(page, "08-frozen-version")
    banner = page.inner_text(".frozen-banner")
    assert "is frozen" in banner and "read-only" in banner
    assert page.locator("a.addlink", has_text="Add case").count() == 0
    page.locator(".field-cases td a[href*='/caseversion/']").first.click()  # a case, from the list
    page.wait_for_url("**/caseversion/**")
    assert "greeting" in page.inner_text("#content")
    assert "read-only" in page.inner_text(".frozen-banner")
    assert page.locator("input[name=_save]").count() == 0
    shot(page, "09-frozen-case")
    check = frozen.checks.get()
    page.goto(f"{server}/admin/evaluations/check/{check.pk}/change/")
    assert "read-only" in page.inner_text(".frozen-banner")
    assert page.locator("#preview-button").count() == 0
    shot(page, "10-frozen-check")

    # The banner's way to a draft: the button on the dataset's page, whose message links it.
    page.goto(f"{server}/admin/evaluations/datasetversion/{frozen.pk}/change/")
    page.click('.frozen-banner a:has-text("the dataset\'s page")')
    page.wait_for_url(f"**/admin/evaluations/dataset/{frozen.dataset_id}/change/")
    shot(page, "12-dataset-page")
    page.click("button:has-text('Start a new draft version')")
    message = page.inner_text(".messagelist")
    assert message == "refunds: new draft version v2 started; open it to add and change cases."
    assert page.locator("button:has-text('Start a new draft version')").count() == 0
    shot(page, "13-draft-started")
    page.click(".messagelist a:has-text('v2')")
    page.wait_for_url("**/admin/evaluations/datasetversion/**")
    assert page.locator("a.addlink", has_text="Add case").count() == 1
    assert frozen.dataset.versions.get(number=2).case_versions.count() == 1

    # A new dataset: no owner field, the creator owns it.
    page.goto(f"{server}/admin/evaluations/dataset/add/")
    page.locator("#id_name").press_sequentially("Billing desk")
    assert page.input_value("#id_slug") == "billing-desk"  # prepopulated from the name
    shot(page, "11-dataset-add")
    page.click("input[name=_save]")
    assert "was added successfully" in page.inner_text(".messagelist")
    assert Dataset.objects.get(slug="billing-desk").owner.username == "editor"
