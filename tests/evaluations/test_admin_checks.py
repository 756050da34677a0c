"""Writing checks in the admin: the kind from the registry's five groups with its params
described beside it, the custom check's own fields, a preview before saving (the API's code),
refusals on the form; and datasets created in the admin owned by their creator and audited."""

from html import unescape

import pytest

from evaluations.admin.forms import kind_choices
from evaluations.checks import GROUP_TITLES, REGISTRY, describe_params
from evaluations.models import Check, Dataset
from governance.models import AuditEntry
from tests.support import factories
from tests.support.governance import grant_on

ADD = "/admin/evaluations/check/add/"
PREVIEW = "/admin/evaluations/check/preview/"


@pytest.fixture
def draft(db):
    return factories.dataset_version(
        factories.dataset("refunds"),
        cases=[("refund-1", "Can I change my plan?", {"expected_tools": [{"name": "refund"}]})],
        frozen=False,
    )


def new_check(version, **fields):
    data = {
        "dataset_version": version.pk,
        "label": "Tools",
        "kind": "tools_used",
        "params": "",
        "threshold": "1",
        "mode": "blocking",
        "judge_model": "",
        "min_labels": 20,
        "kappa_floor": 0.6,
        "position": 0,
    }
    data.update(fields)
    return data


def form_of(response):
    return response.context["adminform"].form


def test_kinds_are_the_registry_s_in_its_five_groups():
    groups = kind_choices()
    assert [title for title, _ in groups] == list(GROUP_TITLES.values())
    assert sorted(kind for _, kinds in groups for kind, _ in kinds) == sorted(REGISTRY)


def test_params_are_described_from_the_schema():
    rows = {row["name"]: row for row in describe_params("latency")}
    assert rows["max_ms"]["required"] and rows["max_ms"]["type"] == "number"
    assert rows["graded"]["default"] == "false" and rows["graded"]["type"] == "true/false"
    assert "2 x max_ms" in rows["zero_ms"]["meaning"]
    match = {row["name"]: row for row in describe_params("tools_used")}["match"]
    assert match["type"] == 'one of "any_order", "in_order", "exact"'
    undescribed = [(k, r["name"]) for k in REGISTRY for r in describe_params(k) if not r["meaning"]]
    assert undescribed == []  # every param says what it means, beside the form


def test_the_check_form_shows_the_groups_and_each_kind_s_params(logged_in, editor, draft):
    html = logged_in(editor).get(f"{ADD}?dataset_version={draft.pk}").content.decode()
    for title in GROUP_TITLES.values():
        assert f'<optgroup label="{title}">' in html
    assert 'data-kind="table_values"' in html and "<code>rel_tol</code>" in html
    assert "evaluations/check_form.js" in html and "htmx-2.0.11.min.js" in html
    assert "Score 0 means" in html and "Preview: score this check" in html


def test_an_editor_adds_a_check(logged_in, editor, draft):
    response = logged_in(editor).post(ADD, new_check(draft))
    assert response.status_code == 302, form_of(response).errors
    check = Check.objects.get(dataset_version=draft, label="Tools")
    assert check.params["match"] == "any_order"  # defaults filled in by the action
    assert AuditEntry.objects.filter(action="evaluations.check.create").exists()


def test_the_custom_check_takes_its_criterion_and_anchors_in_their_own_fields(
    logged_in, editor, draft
):
    fields = new_check(
        draft,
        label="House terms",
        kind="custom",
        criterion="Says 'member', never 'user'.",
        anchor_0="says 'user'",
        anchor_1="says 'member' throughout",
    )
    response = logged_in(editor).post(ADD, fields)
    assert response.status_code == 302, form_of(response).errors
    check = Check.objects.get(label="House terms")
    assert check.params == {
        "label": "House terms",
        "criterion": "Says 'member', never 'user'.",
        "anchors": {"0": "says 'user'", "1": "says 'member' throughout"},
    }
    page = logged_in(editor).get(f"/admin/evaluations/check/{check.pk}/change/")
    form = form_of(page)
    assert form["criterion"].value() == "Says 'member', never 'user'."
    assert form["anchor_1"].value() == "says 'member' throughout"
    assert form["params"].value() in ("", "{}")


def test_a_custom_check_without_criterion_is_refused_on_the_criterion(logged_in, editor, draft):
    response = logged_in(editor).post(ADD, new_check(draft, label="Terms", kind="custom"))
    assert response.status_code == 200
    assert form_of(response).errors["criterion"] == ["params: criterion: is required"]
    assert not Check.objects.filter(label="Terms").exists()


def test_bad_params_are_shown_on_the_params_field_with_the_input_kept(logged_in, editor, draft):
    response = logged_in(editor).post(
        ADD, new_check(draft, kind="latency", label="Fast", params='{"max_ms": "fast"}')
    )
    assert response.status_code == 200
    errors = form_of(response).errors["params"]
    assert errors and errors[0].startswith("params: max_ms:")
    assert "fast" in response.content.decode() and 'value="Fast"' in response.content.decode()
    assert not Check.objects.filter(label="Fast").exists()


def test_a_duplicate_label_is_refused_on_the_label(logged_in, editor, draft):
    client = logged_in(editor)
    client.post(ADD, new_check(draft))
    response = client.post(ADD, new_check(draft))
    assert "label" in form_of(response).errors


def test_the_preview_scores_the_check_on_a_case_and_a_transcript(logged_in, editor, draft):
    cv = draft.case_versions.get()
    fields = new_check(
        draft, preview_case=cv.case.key, preview_transcript='{"output": "ok", "tool_calls": []}'
    )
    response = logged_in(editor).post(PREVIEW, fields)
    html = response.content.decode()
    assert response.status_code == 200 and "failed" in html  # the case expects `refund`
    assert "score 0.000" in html
    assert not Check.objects.exists()  # nothing saved
    fields["preview_transcript"] = '{"output": "ok", "tool_calls": [{"name": "refund"}]}'
    assert "passed" in logged_in(editor).post(PREVIEW, fields).content.decode()


def test_the_preview_names_bad_params_and_a_missing_transcript(logged_in, editor, draft):
    fields = new_check(draft, kind="latency", params='{"max_ms": "fast"}')
    html = logged_in(editor).post(PREVIEW, {**fields, "preview_transcript": "{}"})
    assert "max_ms: 'fast' is not of type 'number'" in unescape(html.content.decode())
    html = logged_in(editor).post(PREVIEW, new_check(draft)).content.decode()
    assert "Paste a transcript to score." in html


def test_a_model_check_preview_without_a_judge_is_skipped(logged_in, editor, draft, settings):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    fields = new_check(
        draft,
        kind="custom",
        label="Terms",
        criterion="Polite.",
        preview_case=draft.case_versions.get().case.key,
        preview_transcript="Sure, happy to help.",  # plain text: the output
    )
    html = logged_in(editor).post(PREVIEW, fields).content.decode()
    assert "skipped" in html and "no judge" in html


def test_an_outsider_gets_no_preview(logged_in, outsider, draft):
    response = logged_in(outsider).post(PREVIEW, new_check(draft, preview_transcript="{}"))
    assert "You may not preview checks" in response.content.decode()


def test_a_frozen_check_page_is_read_only_and_says_so(logged_in, editor):
    frozen = factories.dataset_version(
        cases=[("c1", "q", {})],
        checks=[{"label": "Shape", "kind": "output_type", "params": {"type": "text"}}],
    )
    check = frozen.checks.get()
    html = logged_in(editor).get(f"/admin/evaluations/check/{check.pk}/change/").content.decode()
    assert "is frozen" in html and 'name="_save"' not in html and "Preview:" not in html


def test_a_builder_is_offered_neither_add_nor_delete_on_checks(logged_in, builder, draft):
    client = logged_in(builder)
    html = client.get("/admin/evaluations/check/").content.decode()
    assert f'href="{ADD}"' not in html and "delete_checks" not in html
    assert client.post(ADD, new_check(draft)).status_code == 403
    assert not Check.objects.exists()


def test_the_delete_checks_action_goes_through_delete_check(logged_in, editor, draft):
    client = logged_in(editor)
    client.post(ADD, new_check(draft))
    check = Check.objects.get()
    client.post(
        "/admin/evaluations/check/", {"action": "delete_checks", "_selected_action": [check.pk]}
    )
    assert not Check.objects.exists()
    assert AuditEntry.objects.filter(action="evaluations.check.delete").exists()


# --- datasets -------------------------------------------------------------------------------------


def test_creating_a_dataset_in_the_admin_sets_its_owner_and_is_audited(logged_in, editor):
    response = logged_in(editor).post(
        "/admin/evaluations/dataset/add/",
        {"slug": "billing", "name": "Billing", "description": "Invoices"},
    )
    assert response.status_code == 302
    dataset = Dataset.objects.get(slug="billing")
    assert dataset.owner == editor
    entry = AuditEntry.objects.get(action="evaluations.dataset.create")
    assert entry.after["owner"] == "editor" and entry.actor_id == editor.pk


def test_a_taken_slug_is_refused_on_the_slug(logged_in, editor):
    factories.dataset("billing")
    response = logged_in(editor).post(
        "/admin/evaluations/dataset/add/", {"slug": "billing", "name": "Billing"}
    )
    assert response.status_code == 200 and "slug" in form_of(response).errors


def test_a_builder_cannot_create_a_dataset(logged_in, builder):
    assert logged_in(builder).get("/admin/evaluations/dataset/add/").status_code == 403


def test_the_api_creates_a_dataset_through_the_same_action(editor, builder):
    response = factories.api(editor).post(
        "/api/v1/datasets/", {"slug": "billing", "name": "Billing"}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert response.json()["owner"] == "editor"
    assert Dataset.objects.get(slug="billing").owner == editor
    assert AuditEntry.objects.filter(action="evaluations.dataset.create").count() == 1
    taken = factories.api(editor).post(
        "/api/v1/datasets/", {"slug": "billing", "name": "Again"}, format="json"
    )
    assert taken.status_code == 400 and taken.json()["field"] == "slug"
    denied = factories.api(builder).post(
        "/api/v1/datasets/", {"slug": "other", "name": "Other"}, format="json"
    )
    assert denied.status_code == 403
    assert not Dataset.objects.filter(slug="other").exists()


def test_a_dataset_s_page_opens_for_its_editor_with_the_slug_fixed(logged_in, editor):
    dataset = factories.dataset("billing")
    page = logged_in(editor).get(f"/admin/evaluations/dataset/{dataset.pk}/change/")
    assert page.status_code == 200
    assert 'name="slug"' not in page.content.decode() and 'name="name"' in page.content.decode()


def test_the_preview_on_a_saved_check_offers_its_version_s_cases(logged_in, editor, draft):
    client = logged_in(editor)
    client.post(ADD, new_check(draft))
    check = Check.objects.get()
    fields = new_check(draft, preview_case=draft.case_versions.get().case.key)
    fields.pop("dataset_version")
    fields["_check"] = check.pk
    fields["preview_transcript"] = '{"output": "ok", "tool_calls": [{"name": "refund"}]}'
    html = client.post(PREVIEW, fields).content.decode()
    assert "passed" in html
    # A key that is no case of the version is named, not scored against nothing.
    html = client.post(PREVIEW, {**fields, "preview_case": "no-such-case"}).content.decode()
    assert "No case with the key" in unescape(html) and "passed" not in html


def test_an_editor_of_one_dataset_adds_checks_to_its_draft_only(logged_in, draft):
    other = factories.dataset_version(factories.dataset("other"), frozen=False)
    scoped = grant_on(factories.user("scoped"), "Editor", draft.dataset)
    client = logged_in(scoped)
    page = client.get(ADD)
    assert list(form_of(page).fields["dataset_version"].queryset) == [draft]
    assert "dataset_version" in form_of(client.post(ADD, new_check(other))).errors
    assert client.post(ADD, new_check(draft)).status_code == 302
    check = Check.objects.get(dataset_version=draft)
    assert client.get(f"/admin/evaluations/check/{check.pk}/change/").status_code == 200
    assert not Check.objects.filter(dataset_version=other).exists()


def test_the_check_form_shows_the_fields_errors_and_the_verbs_at_once(logged_in, editor, draft):
    client = logged_in(editor)
    client.post(ADD, new_check(draft, label="Fast", kind="latency", params='{"max_ms": 100}'))
    response = client.post(
        ADD, new_check(draft, label="Fast", kind="latency", params="{oops", threshold="5")
    )
    errors = form_of(response).errors
    # The params that do not parse are the form's own; the threshold out of range and the
    # taken label are the check verbs' rules, asked all the same.
    assert {"params", "threshold", "label"} <= set(errors), errors
    assert Check.objects.filter(label="Fast").count() == 1
