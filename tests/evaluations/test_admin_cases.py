"""Writing cases in the admin, as an Editor does it: a typed key, plain text where the data is
text, one context per line, JSON only where the data is JSON; a refused save comes back as a
message on the form with the typed input kept; frozen versions are read-only and say so; who
sees which buttons."""

import re

import pytest
from django.utils import timezone

from evaluations.models import Case, CaseVersion
from governance.models import AuditEntry
from tests.support import factories
from tests.support.governance import grant_on

ADD = "/admin/evaluations/caseversion/add/"
TOOLS_CHECK = {"label": "Tools", "kind": "tools_used", "params": {}, "threshold": 1.0}


@pytest.fixture
def draft(db):
    return factories.dataset_version(
        factories.dataset("refunds"),
        cases=[("c1", "old question", {})],
        checks=[TOOLS_CHECK],
        frozen=False,
    )


def new_case(version, **fields):
    data = {
        "dataset_version": version.pk,
        "key": "refund-over-limit",
        "input_format": "text",
        "input": "Refund order 1182, please.",
        "expected_output": "The refund is refused: over the limit.",
        "contexts": "Refunds above $200 need a manager.\nOrders ship in 2 days.",
        "expected_tools": '[{"name": "refund", "arguments": {"order": 1182}}]',
        "tags": "refunds, smoke\nlimits",
        "overrides": '{"Tools": {"threshold": 0.5}}',
    }
    data.update(fields)
    return data


def form_of(response):
    return response.context["adminform"].form


def test_an_editor_adds_a_case_with_a_key_they_type(logged_in, editor, draft):
    response = logged_in(editor).post(ADD, new_case(draft))
    assert response.status_code == 302, form_of(response).errors
    cv = CaseVersion.objects.get(dataset_version=draft, case__key="refund-over-limit")
    assert cv.input == "Refund order 1182, please."
    assert cv.expected == {"output": "The refund is refused: over the limit."}
    assert cv.contexts == ["Refunds above $200 need a manager.", "Orders ship in 2 days."]
    assert cv.expected_tools == [{"name": "refund", "arguments": {"order": 1182}}]
    assert cv.tags == ["refunds", "smoke", "limits"]
    assert cv.overrides == {"Tools": {"threshold": 0.5}}
    entry = AuditEntry.objects.get(action="evaluations.case.create")
    assert entry.after["key"] == "refund-over-limit" and entry.actor_id == editor.pk


def test_a_structured_input_and_an_expected_table_are_json(logged_in, editor, draft):
    table = '{"columns": ["region"], "rows": [["north"]]}'
    response = logged_in(editor).post(
        ADD,
        new_case(draft, input_format="json", input='{"order": 1182}', expected_table=table),
    )
    assert response.status_code == 302, form_of(response).errors
    cv = CaseVersion.objects.get(case__key="refund-over-limit")
    assert cv.input == {"order": 1182}
    assert cv.expected["table"] == {"columns": ["region"], "rows": [["north"]]}


def test_a_bad_expected_tools_is_shown_on_its_field_with_the_input_kept(logged_in, editor, draft):
    response = logged_in(editor).post(ADD, new_case(draft, expected_tools='[{"tool": "refund"}]'))
    assert response.status_code == 200
    form = form_of(response)
    assert form.errors["expected_tools"] == [
        "expected_tools[0]: needs a tool name (a string, or an object with a name)"
    ]
    page = response.content.decode()
    assert "expected_tools[0]: needs a tool name (a string, or an object with a name)" in (page)
    assert "Refund order 1182, please." in page and "refund-over-limit" in page  # kept
    assert not Case.objects.filter(key="refund-over-limit").exists()  # nothing written
    assert not AuditEntry.objects.filter(action="evaluations.case.create").exists()


def test_json_that_does_not_parse_is_a_field_error(logged_in, editor, draft):
    response = logged_in(editor).post(ADD, new_case(draft, expected_tools="[{name: refund}]"))
    assert "expected_tools" in form_of(response).errors
    response = logged_in(editor).post(ADD, new_case(draft, input_format="json", input="{oops"))
    assert "not valid JSON" in form_of(response).errors["input"][0]


def test_an_override_of_no_check_is_refused_on_the_overrides_field(logged_in, editor, draft):
    response = logged_in(editor).post(ADD, new_case(draft, overrides='{"Nope": {}}'))
    assert form_of(response).errors["overrides"] == ["overrides.Nope: no check with this label"]


def test_every_error_of_the_form_is_shown_at_once_each_on_its_field(logged_in, editor, draft):
    """A key that is not a slug, a tool without a name and an override of no check: one save
    shows all three (not one a save), and nothing is written."""
    response = logged_in(editor).post(
        ADD,
        new_case(
            draft,
            key="late refund",
            expected_tools='[{"nme": "orders.lookup"}]',
            overrides='{"Nope": {"threshold": 0.5}}',
        ),
    )
    assert response.status_code == 200
    errors = form_of(response).errors
    assert set(errors) == {"key", "expected_tools", "overrides"}
    assert errors["expected_tools"] == [
        "expected_tools[0]: needs a tool name (a string, or an object with a name)"
    ]
    assert errors["overrides"] == ["overrides.Nope: no check with this label"]
    assert "slug" in errors["key"][0]
    assert "Please correct the errors below." in response.content.decode()
    assert not Case.objects.filter(key="late refund").exists()
    assert not AuditEntry.objects.filter(action="evaluations.case.create").exists()


def test_a_taken_key_and_a_bad_override_are_shown_together(logged_in, editor, draft):
    response = logged_in(editor).post(
        ADD, new_case(draft, key="c1", overrides='{"Tools": {"mode": "bogus"}}')
    )
    errors = form_of(response).errors
    assert errors["key"] == ["key: case 'c1' is already in this version"]
    assert errors["overrides"] == ["overrides.Tools.mode: must be one of blocking, informative"]


def test_a_change_shows_every_error_of_the_fields_that_change(logged_in, editor, draft):
    cv = draft.case_versions.get()
    response = logged_in(editor).post(
        f"/admin/evaluations/caseversion/{cv.pk}/change/",
        {
            "input_format": "text",
            "input": "old question",
            "expected_tools": '["kb.search", {"arguments": {}}, {"nme": "x"}]',
            "overrides": '{"Nope": {}, "Tools": {"threshold": 2}}',
        },
    )
    errors = form_of(response).errors
    assert errors["expected_tools"] == [
        "expected_tools[1]: needs a tool name (a string, or an object with a name)",
        "expected_tools[2]: needs a tool name (a string, or an object with a name)",
    ]
    assert errors["overrides"] == [
        "overrides.Nope: no check with this label",
        "overrides.Tools.threshold: must be in [0, 1]",
    ]
    cv.refresh_from_db()
    assert cv.expected_tools == [] and cv.overrides == {}


def test_a_refusal_the_form_also_finds_is_shown_once(logged_in, editor, draft, monkeypatch):
    """The form checks the case before saving; when the action still refuses (the draft changed
    meanwhile), the page is shown again, the form checks again and finds the same error: it is
    shown once, not twice."""
    from evaluations.admin import forms as admin_forms

    real, calls = admin_forms.content_errors, []

    def first_time_blind(fields, checks):
        calls.append(1)
        return [] if len(calls) == 1 else real(fields, checks)

    monkeypatch.setattr(admin_forms, "content_errors", first_time_blind)
    response = logged_in(editor).post(ADD, new_case(draft, overrides='{"Nope": {}}'))
    assert len(calls) == 2  # before the save, and on the page that shows the refusal
    assert form_of(response).errors["overrides"] == ["overrides.Nope: no check with this label"]
    assert not Case.objects.filter(key="refund-over-limit").exists()


def test_the_add_case_page_is_titled_add_case(logged_in, editor, draft):
    html = logged_in(editor).get(f"{ADD}?dataset_version={draft.pk}").content.decode()
    assert "<h1>Add case</h1>" in html and "<title>Add case |" in html
    assert "Add case version" not in html


def test_a_key_already_in_the_version_is_refused_on_the_key(logged_in, editor, draft):
    response = logged_in(editor).post(ADD, new_case(draft, key="c1"))
    assert form_of(response).errors["key"] == ["key: case 'c1' is already in this version"]


def test_an_editor_changes_only_what_they_changed(logged_in, editor, draft):
    cv = draft.case_versions.get()
    client = logged_in(editor)
    page = client.get(f"/admin/evaluations/caseversion/{cv.pk}/change/")
    assert 'name="key"' in page.content.decode() and "disabled" in page.content.decode()
    response = client.post(
        f"/admin/evaluations/caseversion/{cv.pk}/change/",
        {"input_format": "text", "input": "old question", "tags": "a, b"},
    )
    assert response.status_code == 302
    entry = AuditEntry.objects.get(action="evaluations.case.update")
    assert entry.after["tags"] == ["a", "b"] and entry.before["tags"] == []


def test_expected_keys_the_form_does_not_show_are_kept(logged_in, editor, draft):
    cv = draft.case_versions.get()
    kept = ["contains:Paris"]  # a promptfoo import's assertions: a key the form does not show
    CaseVersion.objects.filter(pk=cv.pk).update(expected={"output": "x", "assertions": kept})
    logged_in(editor).post(
        f"/admin/evaluations/caseversion/{cv.pk}/change/",
        {"input_format": "text", "input": "q", "expected_output": "y"},
    )
    cv.refresh_from_db()
    assert cv.expected == {"output": "y", "assertions": kept}


def test_deleting_a_draft_case_goes_through_remove_case(logged_in, editor, draft):
    cv = draft.case_versions.get()
    response = logged_in(editor).post(
        f"/admin/evaluations/caseversion/{cv.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert not CaseVersion.objects.filter(pk=cv.pk).exists()
    assert AuditEntry.objects.filter(action="evaluations.case.remove").exists()


def test_the_remove_action_removes_selected_draft_cases(logged_in, editor, draft):
    cv = draft.case_versions.get()
    logged_in(editor).post(
        "/admin/evaluations/caseversion/",
        {"action": "remove_selected", "_selected_action": [cv.pk]},
    )
    assert not CaseVersion.objects.filter(pk=cv.pk).exists()
    assert AuditEntry.objects.filter(action="evaluations.case.remove").exists()


def test_a_frozen_case_opens_read_only_and_says_so(logged_in, editor):
    frozen = factories.dataset_version(cases=[("c1", "q", {})])
    cv = frozen.case_versions.get()
    page = logged_in(editor).get(f"/admin/evaluations/caseversion/{cv.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "is frozen" in html and "read-only" in html
    assert 'name="_save"' not in html and "deletelink" not in html


def test_a_version_frozen_while_the_form_was_open_keeps_the_input(logged_in, editor, draft):
    cv = draft.case_versions.get()
    client = logged_in(editor)
    client.get(f"/admin/evaluations/caseversion/{cv.pk}/change/")
    draft.frozen_at = timezone.now()
    draft.save(update_fields=["frozen_at"])
    response = client.post(
        f"/admin/evaluations/caseversion/{cv.pk}/change/",
        {"input_format": "text", "input": "my careful new wording"},
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "This dataset version is frozen; edit the draft version instead." in html
    assert "my careful new wording" in html
    cv.refresh_from_db()
    assert cv.input == "old question"


def test_deleting_a_frozen_case_is_a_message_not_a_403(logged_in, editor):
    frozen = factories.dataset_version(cases=[("c1", "q", {})])
    cv = frozen.case_versions.get()
    client = logged_in(editor)
    response = client.get(f"/admin/evaluations/caseversion/{cv.pk}/delete/", follow=True)
    assert response.status_code == 200
    assert "This dataset version is frozen" in response.content.decode()
    assert CaseVersion.objects.filter(pk=cv.pk).exists()


# --- who sees what ---------------------------------------------------------------------------


def test_a_builder_sees_cases_read_only_without_add_or_remove(logged_in, builder, draft):
    client = logged_in(builder)
    listing = client.get("/admin/evaluations/caseversion/")
    assert listing.status_code == 200
    html = listing.content.decode()
    assert f'href="{ADD}"' not in html and "remove_selected" not in html
    cv = draft.case_versions.get()
    page = client.get(f"/admin/evaluations/caseversion/{cv.pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert client.post(ADD, new_case(draft)).status_code == 403  # not a page they may open
    assert not Case.objects.filter(key="refund-over-limit").exists()


def test_a_publisher_cannot_save_a_case(logged_in, publisher, draft):
    cv = draft.case_versions.get()
    client = logged_in(publisher)
    assert client.get(f"/admin/evaluations/caseversion/{cv.pk}/change/").status_code == 200
    client.post(
        f"/admin/evaluations/caseversion/{cv.pk}/change/", {"input_format": "text", "input": "x"}
    )
    cv.refresh_from_db()
    assert cv.input == "old question"


def test_an_outsider_sees_no_cases(logged_in, outsider, draft):
    client = logged_in(outsider)
    assert client.get("/admin/evaluations/caseversion/").status_code == 403
    assert client.post(ADD, new_case(draft)).status_code == 403
    assert not Case.objects.filter(key="refund-over-limit").exists()


def test_an_editor_of_one_dataset_adds_cases_to_its_draft_only(logged_in, draft):
    other = factories.dataset_version(factories.dataset("other"), frozen=False)
    scoped = grant_on(factories.user("scoped"), "Editor", draft.dataset)
    client = logged_in(scoped)
    page = client.get(ADD)
    assert page.status_code == 200
    choices = list(form_of(page).fields["dataset_version"].queryset)
    assert choices == [draft]
    response = client.post(ADD, new_case(other))
    assert "dataset_version" in form_of(response).errors
    assert client.post(ADD, new_case(draft)).status_code == 302
    # Their frozen rows still open, read-only (no bare 403 for a scoped Editor).
    draft.frozen_at = timezone.now()
    draft.save(update_fields=["frozen_at"])
    cv = CaseVersion.objects.get(dataset_version=draft, case__key="refund-over-limit")
    page = client.get(f"/admin/evaluations/caseversion/{cv.pk}/change/")
    assert page.status_code == 200 and "is frozen" in page.content.decode()
    assert client.get(f"/admin/evaluations/datasetversion/{draft.pk}/change/").status_code == 200


# --- the dataset version's page ----------------------------------------------------------------


def test_a_draft_page_offers_add_case_and_add_check_to_its_editors(logged_in, editor, draft):
    html = logged_in(editor).get(f"/admin/evaluations/datasetversion/{draft.pk}/change/")
    html = html.content.decode()
    assert f"/admin/evaluations/caseversion/add/?dataset_version={draft.pk}" in html
    assert f"/admin/evaluations/check/add/?dataset_version={draft.pk}" in html


def test_the_add_case_link_preselects_the_draft(logged_in, editor, draft):
    page = logged_in(editor).get(f"{ADD}?dataset_version={draft.pk}")
    assert str(form_of(page)["dataset_version"].value()) == str(draft.pk)


def test_a_builder_gets_no_add_links_and_no_freeze_action(logged_in, builder, draft):
    client = logged_in(builder)
    html = client.get(f"/admin/evaluations/datasetversion/{draft.pk}/change/").content.decode()
    assert "Add case" not in html
    assert 'value="freeze"' not in client.get("/admin/evaluations/datasetversion/").content.decode()


def test_an_editor_is_offered_the_freeze_action(logged_in, editor, draft):
    html = logged_in(editor).get("/admin/evaluations/datasetversion/").content.decode()
    assert 'value="freeze"' in html


def test_a_frozen_version_page_says_it_is_read_only_and_links_the_draft(logged_in, editor):
    dataset = factories.dataset("refunds")
    frozen = factories.dataset_version(dataset, cases=[("c1", "q", {})])
    draft = factories.dataset_version(dataset, frozen=False)
    html = logged_in(editor).get(f"/admin/evaluations/datasetversion/{frozen.pk}/change/")
    html = html.content.decode()
    assert "is frozen" in html and "read-only" in html and "Add case" not in html
    assert f"/admin/evaluations/datasetversion/{draft.pk}/change/" in html


def test_the_case_form_links_the_formats_doc_which_the_admin_serves(logged_in, editor, draft):
    client = logged_in(editor)
    html = client.get(ADD).content.decode()
    assert "/admin/evaluations/check/docs/checks/" in html
    doc = client.get("/admin/evaluations/check/docs/checks/")
    assert doc.status_code == 200 and doc["Content-Type"].startswith("text/html")
    page = doc.content.decode()
    assert '<h2 id="the-case">The case' in page and "## The case" not in page  # rendered
    assert '<a href="#the-case">The case</a>' in page  # the list of sections
    assert client.get("/admin/evaluations/check/docs/secrets/").status_code == 404


HELP_LINK = re.compile(r'href="(/admin/evaluations/check/docs/(\w+)/)#([\w-]+)"')


@pytest.mark.parametrize(
    "url",
    [ADD, "/admin/evaluations/check/add/", "/admin/evaluations/dataset/{dataset}/import/"],
)
def test_every_help_link_opens_its_doc_at_a_section_that_is_there(logged_in, editor, draft, url):
    client = logged_in(editor)
    html = client.get(url.format(dataset=draft.dataset_id)).content.decode()
    links = set(HELP_LINK.findall(html))
    assert links
    for doc_url, name, section in links:
        page = client.get(doc_url).content.decode()
        assert f'id="{section}"' in page, f"docs/{name}.md has no section #{section}"
    if url == ADD:
        assert {(name, section) for _, name, section in links} == {
            ("checks", "the-case"),
            ("checks", "tables"),
            ("checks", "charts"),
            ("checks", "writing-cases-and-checks-in-the-admin"),
            ("contract", "outcome-verifiers-caseversionoutcome_check"),
        }
        assert 'Format of "input": docs/checks.md, "The case"</a>' in html


def test_a_doc_is_html_with_no_raw_html_and_its_links_to_docs_work(
    logged_in, editor, settings, tmp_path
):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(
        "# Guide\n\n## First part\n\n<script>alert(1)</script>\n\n"
        'Text <b onclick="x()">bold</b>, [other](other.md#a-b), [js](javascript:alert(1)), '
        "[web](https://example.org/), `<code>`.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        encoding="utf-8",
    )
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## A b\n", encoding="utf-8")
    settings.BASE_DIR = tmp_path
    client = logged_in(editor)
    page = client.get("/admin/evaluations/check/docs/guide/").content.decode()
    assert '<h2 id="first-part">First part' in page
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b onclick" not in page and "&lt;b onclick=" in page
    assert '<a href="/admin/evaluations/check/docs/other/#a-b">other</a>' in page
    assert "javascript:" not in page and "<span>js</span>" in page
    assert '<a href="https://example.org/">web</a>' in page
    assert "<code>&lt;code&gt;</code>" in page and "<td>1</td>" in page
    assert client.get("/admin/evaluations/check/docs/checks/").status_code == 404  # not there


def test_an_outcome_verifier_naming_sherlocks_secret_is_refused_and_audited(
    logged_in, editor, draft
):
    """As through the API (`evaluations.case.refused`): trying to send a secret is evidence."""
    verifier = (
        '{"kind": "http", "url": "https://crm.example.com/x", '
        '"headers_env": {"X-Key": "SHERLOCK_AUDIT_KEY"}, '
        '"predicate": {"path": "$.ok", "op": "truthy"}}'
    )

    response = logged_in(editor).post(ADD, new_case(draft, outcome_check=verifier))

    assert response.status_code == 200
    assert (
        "SHERLOCK_AUDIT_KEY is Sherlock's own secret"
        in form_of(response).errors["outcome_check"][0]
    )
    assert not CaseVersion.objects.filter(case__key="refund-over-limit").exists()
    entry = AuditEntry.objects.get(action="evaluations.case.refused")
    assert entry.actor_id == editor.pk and entry.target_id == str(draft.pk)
    assert entry.after == {"verb": "create", "code": "egress_refused"}
