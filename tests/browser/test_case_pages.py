"""Case import, export and version comparison in a real browser (chromium through Playwright),
as an Editor uses them: a line with three errors shows all three, a file with a bad line is
previewed (the line number shown, nothing saved), fixed and imported, the cases are downloaded,
and two versions are compared.

Set SHERLOCK_SCREENSHOTS to a directory to keep a screenshot of each page (conftest.py).
"""

from pathlib import Path

import pytest

from evaluations.models import Case, DatasetVersion
from tests.support import factories
from tests.support.browser import log_in

pytestmark = [pytest.mark.slow]

BAD = (
    '{"key": "refund", "input": "Refund $20?", "tags": ["money"]}\n'
    '{"key": "broken", "expected_tools": [{"arguments": {}}]}\n'
    '{"key": "new-case", "input": "Hello"}\n'
)
FIXED = BAD.replace('[{"arguments": {}}]', '[{"name": "kb.search"}]')
MULTI = (
    '{"key": "fine", "input": "x"}\n'
    '{"key": "two-bad", "input": "x", "expected_tools": [{"nme": "kb.search"}], '
    '"overrides": {"Nope": {"disabled": true}}, "colour": 1}\n'
)


def test_an_editor_previews_a_bad_file_fixes_it_imports_and_exports_it(server, browser, shot):
    factories.user("editor", role="Editor")
    dataset = factories.dataset("support-basics")
    factories.dataset_version(
        dataset,
        cases=[("refund", "Refund?", {}), ("hello", "Hi", {})],
        checks=[{"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}],
    )
    page = browser.new_page()
    log_in(page, server, "editor", f"/admin/evaluations/dataset/{dataset.pk}/change/")
    assert "v1" in page.inner_text("#dataset-versions")
    shot(page, "dataset-page")

    page.click("text=Import cases")
    page.fill("textarea[name=text]", MULTI)  # one line, three errors: all three are listed
    page.click("input[name=preview]")
    rows = page.locator("#import-errors tbody tr").all_inner_texts()
    assert [row.split("\t")[:2] for row in rows] == [
        ["line 2", "colour"],
        ["line 2", "expected_tools[0]"],
        ["line 2", "overrides.Nope"],
    ]
    assert "overrides.Nope: no check with this label" in rows[2]
    shot(page, "import-preview-every-error")

    page.fill("textarea[name=text]", BAD)
    page.click("input[name=preview]")
    errors = page.inner_text("#import-errors")
    assert "line 2" in errors and "expected_tools[0]: needs a tool name" in errors
    assert page.locator("input[name=confirm]").count() == 0
    shot(page, "import-preview-error")
    assert not Case.objects.filter(key="new-case").exists()
    assert DatasetVersion.objects.filter(dataset=dataset).count() == 1

    page.fill("textarea[name=text]", FIXED)  # the pasted text was kept: fix it in place
    page.click("input[name=preview]")
    preview = page.inner_text("#import-preview")
    assert "2 added" in preview and "1 changed" in preview
    assert "refund" in page.inner_text("#import-changed")
    shot(page, "import-preview")
    assert not Case.objects.filter(key="new-case").exists()

    page.click("input[name=confirm]")
    page.wait_for_selector("text=2 added, 1 changed, 0 unchanged")
    shot(page, "import-done")
    draft = DatasetVersion.objects.get(dataset=dataset, frozen_at__isnull=True)
    keys = set(draft.case_versions.values_list("case__key", flat=True))
    assert keys == {"refund", "hello", "broken", "new-case"}

    # Export: the dataset page's download link, and the admin action on the versions list.
    page.goto(f"{server}/admin/evaluations/dataset/{dataset.pk}/change/")
    with page.expect_download() as download:
        page.click(f"#dataset-versions a[href$='version={draft.number}&format=csv']")
    text = Path(download.value.path()).read_text()
    assert text.startswith("key,input,") and "new-case,Hello" in text

    page.goto(f"{server}/admin/evaluations/datasetversion/")
    page.check(f"input[name=_selected_action][value='{draft.pk}']")
    page.select_option("select[name=action]", "export_cases_jsonl")
    with page.expect_download() as download:
        page.click("button[name=index]")
    assert download.value.suggested_filename == f"support-basics-v{draft.number}.jsonl"
    assert '"key": "broken"' in Path(download.value.path()).read_text()

    page.goto(f"{server}/admin/evaluations/dataset/{dataset.pk}/compare/?a=1&b=2")
    cases = page.inner_text("#diff-cases")
    assert "2 added, 0 removed, 1 changed, 1 unchanged" in cases
    assert "Refund $20?" in cases
    shot(page, "compare-versions")
