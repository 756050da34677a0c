"""The evaluations admin goes through the actions: drafts are edited and audited like in the
API, frozen versions are immutable, changelists are scoped and keep a constant query count."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from guardian.shortcuts import assign_perm

from evaluations.actions.start_run import StartRun
from evaluations.models import Check, DatasetVersion
from governance.models import AuditEntry
from tests.support import factories

GOOD = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}


def form(check, **changes):
    data = {
        "dataset_version": check.dataset_version_id,
        "label": check.label,
        "kind": check.kind,
        "params": '{"type": "text"}',
        "threshold": check.threshold,
        "mode": check.mode,
        "judge_model": "",
        "min_labels": 20,
        "kappa_floor": 0.6,
        "position": 0,
    }
    data.update(changes)
    return data


def test_editor_changes_a_draft_check_through_the_action(logged_in, editor):
    draft = factories.dataset_version(cases=[("c1", "x", {})], checks=[GOOD], frozen=False)
    check = draft.checks.get()
    response = logged_in(editor).post(
        f"/admin/evaluations/check/{check.pk}/change/", form(check, threshold="0.5")
    )
    assert response.status_code == 302
    check.refresh_from_db()
    assert check.threshold == 0.5
    entry = AuditEntry.objects.get(action="evaluations.check.update")
    assert entry.before["threshold"] == 1.0 and entry.after["threshold"] == 0.5


def test_a_frozen_check_cannot_be_changed_or_deleted_in_the_admin(logged_in, editor):
    frozen = factories.dataset_version(cases=[("c1", "x", {})], checks=[GOOD])
    check = frozen.checks.get()
    client = logged_in(editor)
    page = client.post(f"/admin/evaluations/check/{check.pk}/change/", form(check, threshold="0"))
    assert "This dataset version is frozen" in page.content.decode()  # a message, not a 403
    response = client.post(f"/admin/evaluations/check/{check.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    check.refresh_from_db()
    assert check.threshold == 1.0
    assert not AuditEntry.objects.filter(action__startswith="evaluations.check").exists()


def test_the_freeze_admin_action_leads_to_its_confirmation_and_freezes_nothing(logged_in, editor):
    draft = factories.dataset_version(cases=[("c1", "x", {})], checks=[GOOD], frozen=False)
    response = logged_in(editor).post(
        "/admin/evaluations/datasetversion/",
        {"action": "freeze", "_selected_action": [draft.pk]},
    )
    assert response.status_code == 302
    assert response["Location"] == f"/admin/evaluations/datasetversion/{draft.pk}/freeze/"
    assert not DatasetVersion.objects.get(pk=draft.pk).is_frozen  # confirmed there


def test_builder_cannot_freeze_from_the_admin(logged_in, builder):
    draft = factories.dataset_version(cases=[("c1", "x", {})], frozen=False)
    client = logged_in(builder)
    client.post(
        "/admin/evaluations/datasetversion/",
        {"action": "freeze", "_selected_action": [draft.pk]},
    )
    client.post(f"/admin/evaluations/datasetversion/{draft.pk}/freeze/", {"seen": "1:0:0"})
    assert not DatasetVersion.objects.get(pk=draft.pk).is_frozen


def test_an_editor_of_one_dataset_sees_only_its_checks(db, logged_in):
    mine = factories.dataset_version(factories.dataset("mine"), checks=[GOOD], frozen=False)
    factories.dataset_version(factories.dataset("theirs"), checks=[GOOD], frozen=False)
    scoped = factories.user("scoped-editor")
    for perm in ("view_dataset", "change_dataset", "edit_dataset"):
        assign_perm(f"evaluations.{perm}", scoped, mine.dataset)
    page = logged_in(scoped).get("/admin/evaluations/check/")
    assert page.status_code == 200
    assert page.context["cl"].result_count == 1
    assert Check.objects.count() == 2


def test_hand_labels_cannot_be_forged_in_the_admin(logged_in, editor):
    assert logged_in(editor).get("/admin/evaluations/humanlabel/add/").status_code == 403


def _queries(client, url):
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx)


@pytest.mark.parametrize(
    "url",
    [
        "/admin/evaluations/trial/",
        "/admin/evaluations/caseresult/",
        "/admin/evaluations/checkresult/",
        "/admin/evaluations/run/",
        "/admin/evaluations/check/",
    ],
)
def test_changelists_keep_a_constant_number_of_queries(
    url, logged_in, admin_user, builder, django_capture_on_commit_callbacks
):
    client = logged_in(admin_user)
    version = factories.agent_version(callable_path="tests.support.agents_under_test.echo")

    def add_run(n, slug):
        dv = factories.dataset_version(
            factories.dataset(slug), cases=[(f"c{i}", "q", {}) for i in range(n)], checks=[GOOD]
        )
        with django_capture_on_commit_callbacks(execute=True):
            StartRun(acting_user=builder, agent_version=version, dataset_version=dv).execute()

    add_run(2, "small")
    _queries(client, url)  # warm the session and content-type caches
    few = _queries(client, url)
    add_run(10, "big")
    assert _queries(client, url) == few


def test_editor_changes_a_draft_case_through_the_action(logged_in, editor):
    draft = factories.dataset_version(cases=[("c1", "old question", {})], frozen=False)
    case = draft.case_versions.get()
    response = logged_in(editor).post(
        f"/admin/evaluations/caseversion/{case.pk}/change/",
        {"input_format": "text", "input": "new question"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    case.refresh_from_db()
    assert case.input == "new question"
    entry = AuditEntry.objects.get(action="evaluations.case.update")
    assert entry.before["input"] == "old question" and entry.after["input"] == "new question"


# --- "Start a new draft version" on the dataset's page -----------------------------------------


def dataset_page(client, dataset):
    return client.get(f"/admin/evaluations/dataset/{dataset.pk}/change/").content.decode()


def start_draft(client, dataset):
    return client.post(f"/admin/evaluations/dataset/{dataset.pk}/start-draft/", follow=True)


def test_the_dataset_page_starts_a_draft_and_the_message_links_it(logged_in, editor):
    frozen = factories.dataset_version(cases=[("c1", "x", {})], checks=[GOOD])
    dataset = frozen.dataset
    client = logged_in(editor)
    assert f'action="/admin/evaluations/dataset/{dataset.pk}/start-draft/"' in (
        dataset_page(client, dataset)
    )

    response = start_draft(client, dataset)

    draft = DatasetVersion.objects.get(dataset=dataset, frozen_at__isnull=True)
    assert draft.number == 2 and draft.case_versions.count() == 1  # a copy of v1
    assert response.redirect_chain[-1][0] == f"/admin/evaluations/dataset/{dataset.pk}/change/"
    page = response.content.decode()
    link = f'<a href="/admin/evaluations/datasetversion/{draft.pk}/change/">v2</a>'
    assert f"{dataset.slug}: new draft version {link} started" in page  # a link, not escaped
    entry = AuditEntry.objects.get(action="evaluations.dataset_version.create")
    assert entry.actor == editor and entry.target_id == str(draft.pk)
    assert "start-draft/" not in page  # a dataset has one draft: the button is gone


def test_a_refused_start_is_a_message_on_the_dataset_page(logged_in, editor, builder):
    frozen = factories.dataset_version(cases=[("c1", "x", {})])
    dataset = frozen.dataset
    assert "start-draft/" not in dataset_page(logged_in(builder), dataset)  # not offered

    response = start_draft(logged_in(builder), dataset)  # posted all the same

    assert response.status_code == 200
    assert "Editor role needed" in response.content.decode()
    assert not DatasetVersion.objects.filter(frozen_at__isnull=True).exists()
    assert AuditEntry.objects.get(action="evaluations.dataset_version.refused").actor == builder

    client = logged_in(editor)
    start_draft(client, dataset)
    response = start_draft(client, dataset)  # a second tab: the draft exists by now
    assert "already has a draft version" in response.content.decode()
    assert DatasetVersion.objects.filter(frozen_at__isnull=True).count() == 1
    assert client.get(f"/admin/evaluations/dataset/{dataset.pk}/start-draft/").status_code == 405


def test_the_list_action_s_message_links_the_new_draft(logged_in, editor):
    dataset = factories.dataset_version(cases=[("c1", "x", {})]).dataset
    response = logged_in(editor).post(
        "/admin/evaluations/dataset/",
        {"action": "start_draft", "_selected_action": [dataset.pk]},
        follow=True,
    )
    draft = DatasetVersion.objects.get(dataset=dataset, frozen_at__isnull=True)
    link = f'<a href="/admin/evaluations/datasetversion/{draft.pk}/change/">v2</a>'
    assert f"{dataset.slug}: new draft version {link} started" in response.content.decode()


def test_the_frozen_banner_points_at_the_button_on_the_dataset_page(logged_in, editor):
    frozen = factories.dataset_version(cases=[("c1", "x", {})], checks=[GOOD])
    client = logged_in(editor)
    for url in (
        f"/admin/evaluations/datasetversion/{frozen.pk}/change/",
        f"/admin/evaluations/caseversion/{frozen.case_versions.get().pk}/change/",
        f"/admin/evaluations/check/{frozen.checks.get().pk}/change/",
    ):
        html = client.get(url).content.decode()
        assert '"Start a new draft version"' in html, url
        assert f'href="/admin/evaluations/dataset/{frozen.dataset_id}/change/"' in html, url
    assert ">Start a new draft version</button>" in dataset_page(client, frozen.dataset)


# --- words on the admin's pages ----------------------------------------------------------------


def test_a_message_that_starts_with_a_slug_keeps_it_as_written(logged_in, editor):
    """Django's admin capitalises every message: "Support-basics v2: frozen." names no
    dataset of ours. Sherlock's own messages that start with a name are shown as written."""
    draft = factories.dataset_version(
        factories.dataset("support-basics"), cases=[("c1", "x", {})], frozen=False
    )
    url = f"/admin/evaluations/datasetversion/{draft.pk}/freeze/"
    response = logged_in(editor).post(url, {"seen": "1:0:0"}, follow=True)
    page = response.content.decode()
    assert '<li class="as-written success">support-basics v1: frozen.</li>' in page
    response = logged_in(editor).post(url, {"seen": "1:0:0"}, follow=True)
    assert (
        '<li class="as-written error">support-basics v1: This dataset version is already frozen.'
        in response.content.decode()
    )


def test_cost_entries_are_called_cost_entries(logged_in, admin_user):
    html = logged_in(admin_user).get("/admin/").content.decode()
    assert "Cost entries" in html and "Cost entrys" not in html
