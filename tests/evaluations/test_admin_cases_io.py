"""The admin's case import page (preview, then confirm; refusals as messages), the "Export
cases" actions on dataset versions, the versions list on the dataset's page and the compare
page."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluations.models import Case, DatasetVersion
from governance.models import AuditEntry
from tests.support import factories

pytestmark = pytest.mark.django_db

TOOLS = {"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}


@pytest.fixture
def dataset():
    dataset = factories.dataset("support")
    factories.dataset_version(dataset, cases=[("refund", "Refund?", {})], checks=[TOOLS])
    return dataset


def url(dataset, page="import"):
    return f"/admin/evaluations/dataset/{dataset.pk}/{page}/"


def test_the_preview_shows_every_error_with_its_line_and_writes_nothing(logged_in, editor, dataset):
    client = logged_in(editor)
    text = '{"key": "ok", "input": "x"}\n{"key": "bad", "expected_tools": [{}]}\n'
    page = client.post(url(dataset), {"text": text, "format": "", "preview": "Preview"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "line 2" in html and "expected_tools[0]: needs a tool name" in html
    assert "Confirm import" not in html
    assert text.splitlines()[1].replace('"', "&quot;") in html  # the pasted text is kept
    assert not Case.objects.filter(key="ok").exists()
    assert DatasetVersion.objects.filter(dataset=dataset).count() == 1


def test_a_file_with_many_bad_rows_shows_the_first_hundred_and_where_the_reading_stopped(
    logged_in, editor, dataset
):
    client = logged_in(editor)
    text = "".join(f'{{"key": "bad-{i}", "expected_tools": [{{}}]}}\n' for i in range(250))
    page = client.post(url(dataset), {"text": text, "format": "", "preview": "Preview"})
    html = page.content.decode()
    assert html.count("needs a tool name") == 100
    assert "line 100<" in html and "line 101<" not in html
    assert "more than 100 errors: the reading stopped here" in html


def test_a_previewed_file_is_imported_only_on_confirm(logged_in, editor, dataset):
    client = logged_in(editor)
    upload = SimpleUploadedFile("cases.csv", b"key,input\nrefund,Refund $20?\nnew,Hello\n")
    page = client.post(url(dataset), {"file": upload, "format": "", "preview": "Preview"})
    html = page.content.decode()
    assert "1 added" in html and "1 changed" in html and "Confirm import" in html
    assert "refund" in html and "input" in html
    assert not Case.objects.filter(key="new").exists()

    done = client.post(url(dataset), {"confirm": "Confirm import"}, follow=True)
    draft = DatasetVersion.objects.get(dataset=dataset, frozen_at__isnull=True)
    assert done.redirect_chain[-1][0] == f"/admin/evaluations/datasetversion/{draft.pk}/change/"
    assert "1 added, 1 changed, 0 unchanged" in done.content.decode()
    assert sorted(draft.case_versions.values_list("case__key", flat=True)) == ["new", "refund"]
    assert AuditEntry.objects.filter(action="evaluations.case.import", actor=editor).count() == 1
    # A second confirm has nothing left to import.
    again = client.post(url(dataset), {"confirm": "Confirm import"}, follow=True)
    assert "Nothing to import" in again.content.decode()


def test_an_unrecognised_format_is_an_error_on_the_form(logged_in, editor, dataset):
    page = logged_in(editor).post(url(dataset), {"text": '{"input": "x"}', "preview": "Preview"})
    assert page.status_code == 200
    assert "cannot tell the format" in page.content.decode()


def test_a_builder_is_sent_back_with_a_message_not_a_bare_403(logged_in, builder, dataset):
    client = logged_in(builder)
    page = client.get(url(dataset), follow=True)
    assert page.status_code == 200
    assert "Editor role needed" in page.content.decode()
    change = client.get(f"/admin/evaluations/dataset/{dataset.pk}/change/")
    assert "Import cases" not in change.content.decode()  # not offered to a Builder


def test_an_outsider_is_told_the_dataset_is_not_there(logged_in, outsider, dataset):
    page = logged_in(outsider).get(url(dataset), follow=True)
    assert page.status_code == 200
    assert "does not exist, or you may not see it" in page.content.decode()


def test_the_dataset_page_lists_its_versions_with_links(logged_in, editor, dataset):
    draft = factories.dataset_version(dataset, cases=[("a", "x", {})], frozen=False)
    html = (
        logged_in(editor).get(f"/admin/evaluations/dataset/{dataset.pk}/change/").content.decode()
    )
    assert f'href="/admin/evaluations/datasetversion/{draft.pk}/change/"' in html
    assert "<strong>draft</strong>" in html and "frozen" in html
    assert "Import cases" in html and "Compare versions" in html
    assert "/api/v1/datasets/support/export/?version=1&amp;format=csv" in html


def test_the_compare_page_shows_cases_and_checks_changed(logged_in, builder, dataset):
    factories.dataset_version(
        dataset, cases=[("refund", "Refund $20?", {}), ("new", "x", {})], checks=[]
    )
    html = logged_in(builder).get(url(dataset, "compare") + "?a=1&b=2").content.decode()
    assert "1 added, 0 removed, 1 changed, 0 unchanged" in html
    assert "Refund $20?" in html and "new" in html
    assert "0 added, 1 removed, 0 changed" in html  # the Tools check


def test_the_compare_page_picks_its_two_versions_by_number_never_listing_them(
    logged_in, builder, dataset
):
    for n in range(4):  # v2 .. v5
        factories.dataset_version(dataset, cases=[("refund", f"Refund {n}?", {})])
    client = logged_in(builder)
    html = client.get(url(dataset, "compare")).content.decode()  # the newest two by default
    assert 'data-ajax--url="/pick/dataset-version/?by=number&amp;dataset=' in html
    assert '<option value="4" selected>support v4</option>' in html
    assert '<option value="5" selected>support v5</option>' in html
    assert "support v2" not in html and html.count("<option") == 4  # two empty, two chosen
    html = client.get(url(dataset, "compare") + "?a=2&b=5").content.decode()
    assert '<option value="2" selected>support v2</option>' in html and "diff-cases" in html
    offered = client.get(
        "/pick/dataset-version/", {"by": "number", "dataset": dataset.pk, "term": "v3"}
    ).json()["results"]
    assert offered == [{"id": 3, "text": "support v3"}]


@pytest.mark.parametrize("fmt,first", [("jsonl", '{"key": "refund"'), ("csv", "key,input")])
def test_the_export_action_downloads_a_versions_cases(logged_in, builder, dataset, fmt, first):
    version = dataset.versions.get()
    answer = logged_in(builder).post(
        "/admin/evaluations/datasetversion/",
        {"action": f"export_cases_{fmt}", "_selected_action": [version.pk]},
    )
    assert answer.status_code == 200
    assert answer["Content-Disposition"] == f'attachment; filename="support-v1.{fmt}"'
    assert answer.content.decode().startswith(first)


def test_the_export_action_asks_for_one_version(logged_in, editor, dataset):
    other = factories.dataset_version(dataset, cases=[("a", "x", {})])
    page = logged_in(editor).post(
        "/admin/evaluations/datasetversion/",
        {"action": "export_cases_csv", "_selected_action": [other.pk, other.pk - 1]},
        follow=True,
    )
    assert "Select one dataset version to export." in page.content.decode()
