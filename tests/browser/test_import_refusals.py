"""The admin's import page in a real browser (chromium through Playwright) refusing what used
to be a 500 or a silent import: a file with JSON nested 10,000 deep and one with a
NUL each show their line on the page, and nothing is saved."""

import pytest

from evaluations.models import DatasetVersion
from governance.models import AuditEntry
from tests.support import factories
from tests.support.browser import log_in

pytestmark = [pytest.mark.slow]

DEEP = (
    '{"key": "fine", "input": "x"}\n{"key": "deep", "input": ' + "[" * 10_000 + "]" * 10_000 + "}\n"
)


def test_an_editor_sees_the_line_of_a_deep_or_nul_file_and_nothing_is_saved(server, browser, shot):
    factories.user("editor", role="Editor")
    dataset = factories.dataset("support-basics")
    factories.dataset_version(dataset, cases=[("refund", "Refund?", {})])
    page = browser.new_page()
    log_in(page, server, "editor", f"/admin/evaluations/dataset/{dataset.pk}/import/")

    page.set_input_files(
        "input[name=file]",
        {"name": "deep.jsonl", "mimeType": "application/x-ndjson", "buffer": DEEP.encode()},
    )
    page.click("input[name=preview]")
    errors = page.inner_text("#import-errors")
    assert "line 2" in errors and "nested deeper than 32 levels (in input)" in errors
    assert page.locator("input[name=confirm]").count() == 0
    shot(page, "import-refused-deep")

    nul = b'{"key": "fine", "input": "x"}\n{"key": "nul", "input": "a\x00b"}\n'
    page.set_input_files(
        "input[name=file]", {"name": "nul.jsonl", "mimeType": "text/plain", "buffer": nul}
    )
    page.click("input[name=preview]")
    errors = page.inner_text("#import-errors")
    assert "line 2" in errors and "a NUL character (not allowed in a case)" in errors
    assert "The file cannot be read" in page.inner_text("#import-form")
    shot(page, "import-refused-nul")

    assert DatasetVersion.objects.filter(dataset=dataset).count() == 1
    assert not AuditEntry.objects.filter(action="evaluations.case.import").exists()
