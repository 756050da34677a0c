"""A new agent and a new dataset in the admin: names picked from an
autocomplete (never a bare id box), "Add version" on the agent's page, "Freeze…" on the draft's
page with a confirmation that names what becomes read-only and takes a note (audited), and a
saved case that leads back to its draft."""

import json

import pytest

from agents.models import Tool
from evaluations.models import DatasetVersion
from governance.models import AuditEntry
from tests.support import factories
from tests.support.governance import grant_on

pytestmark = pytest.mark.django_db

GOOD = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
INFO = {**GOOD, "label": "Tone", "mode": "informative"}


@pytest.fixture
def draft(db):
    return factories.dataset_version(
        factories.dataset("refunds"),
        cases=[("over-limit", "Refund 300", {}), ("under-limit", "Refund 20", {})],
        checks=[GOOD, INFO],
        frozen=False,
    )


def freeze_url(version):
    return f"/admin/evaluations/datasetversion/{version.pk}/freeze/"


# --- autocomplete --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("/admin/agents/agentversion/add/", "agent"),
        ("/admin/agents/agent/add/", "owner"),
        ("/admin/governance/apikey/add/", "user"),
        ("/admin/governance/publishingpolicy/add/", "agent"),
        ("/admin/governance/publishingpolicy/add/", "gate_datasets"),
        ("/admin/agents/agentversion/add/", "tools"),
        ("/admin/agents/agentversion/add/", "denied_tools"),
        ("/admin/evaluations/check/add/", "dataset_version"),
        ("/admin/evaluations/caseversion/add/", "dataset_version"),
        ("/admin/evaluations/runschedule/add/", "agent"),
        ("/admin/evaluations/runschedule/add/", "dataset_version"),
    ],
)
def test_every_picker_of_an_agent_user_dataset_version_or_tool_is_typed_not_listed(
    logged_in, admin_user, draft, url, name
):
    factories.agent("billing-bot")
    Tool.objects.create(name="billing.refund")
    html = logged_in(admin_user).get(url).content.decode()
    assert f'name="{name}"' in html
    tag = html.split(f'name="{name}"', 1)[0].rsplit("<", 1)[1] + html.split(f'name="{name}"')[1]
    assert "admin-autocomplete" in tag.split(">", 1)[0], tag[:300]
    assert "vForeignKeyRawIdAdminField" not in tag.split(">", 1)[0]
    assert "billing-bot" not in html and str(draft) not in html  # no row listed until typed
    assert "billing.refund" not in html


def test_the_agent_autocomplete_finds_an_agent_by_its_name(logged_in, builder):
    factories.agent("billing-bot", name="Billing bot")
    factories.agent("support-bot", name="Support bot")
    client = logged_in(builder)
    answer = client.get(
        "/admin/autocomplete/",
        {
            "term": "billing",
            "app_label": "agents",
            "model_name": "agentversion",
            "field_name": "agent",
        },
    )
    assert answer.status_code == 200
    found = [row["text"] for row in json.loads(answer.content)["results"]]
    assert found == ["billing-bot"]


@pytest.mark.parametrize("field", ["tools", "denied_tools"])
def test_a_builder_of_one_agent_finds_the_tools_its_versions_may_list(logged_in, outsider, field):
    agent = factories.agent("billing-bot")
    Tool.objects.create(name="billing.refund")
    Tool.objects.create(name="support.search")
    scoped = grant_on(factories.user("scoped-builder"), "Builder", agent)
    query = {"term": "refund", "app_label": "agents", "model_name": "agentversion"}
    answer = logged_in(scoped).get("/admin/autocomplete/", {**query, "field_name": field})
    assert answer.status_code == 200
    assert [row["text"] for row in answer.json()["results"]] == ["billing.refund"]
    answer = logged_in(outsider).get("/admin/autocomplete/", {**query, "field_name": field})
    assert answer.status_code == 403  # builds no agent: no tools


def test_an_outsider_gets_no_agents_from_the_autocomplete(logged_in, outsider):
    factories.agent("billing-bot", name="Billing bot")
    answer = logged_in(outsider).get(
        "/admin/autocomplete/",
        {
            "term": "bill",
            "app_label": "agents",
            "model_name": "agentversion",
            "field_name": "agent",
        },
    )
    assert answer.status_code == 403  # the agents' admin is closed to them: nothing listed


def test_a_typed_agent_is_kept_as_chosen_when_adding_a_version(logged_in, builder):
    agent = factories.agent("billing-bot")
    page = logged_in(builder).get(f"/admin/agents/agentversion/add/?agent={agent.pk}")
    assert page.context["adminform"].form["agent"].value() == str(agent.pk)


# --- "Add version" on the agent's page ---------------------------------------------------------


def test_the_agent_page_offers_add_version_to_its_builders(logged_in, builder):
    agent = factories.agent("billing-bot")
    html = logged_in(builder).get(f"/admin/agents/agent/{agent.pk}/change/").content.decode()
    assert f'href="/admin/agents/agentversion/add/?agent={agent.pk}"' in html
    assert ">Add version</a>" in html


def test_a_publisher_sees_the_agent_without_add_version(logged_in, publisher):
    agent = factories.agent("billing-bot")
    html = logged_in(publisher).get(f"/admin/agents/agent/{agent.pk}/change/").content.decode()
    assert ">Add version</a>" not in html


# --- "Freeze…" on the draft's page, confirmed ----------------------------------------------------


def test_the_draft_page_offers_freeze_to_its_editors(logged_in, editor, builder, draft):
    page = f"/admin/evaluations/datasetversion/{draft.pk}/change/"
    assert freeze_url(draft) in logged_in(editor).get(page).content.decode()
    assert freeze_url(draft) not in logged_in(builder).get(page).content.decode()


def test_the_draft_page_offers_its_editors_an_import_of_cases(logged_in, editor, builder, draft):
    page = f"/admin/evaluations/datasetversion/{draft.pk}/change/"
    imports = f"/admin/evaluations/dataset/{draft.dataset_id}/import/"
    assert imports in logged_in(editor).get(page).content.decode()
    assert logged_in(editor).get(imports).status_code == 200
    assert imports not in logged_in(builder).get(page).content.decode()


def test_the_confirmation_names_what_becomes_read_only(logged_in, editor, draft):
    response = logged_in(editor).get(freeze_url(draft))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Freezing cannot be undone" in html
    assert "<strong>2 cases</strong> become read-only" in html
    assert "over-limit, under-limit" in html
    assert "<strong>2 checks</strong> become read-only (1 blocking, 1 informative)" in html
    assert "Shape, Tone" in html
    assert f'value="Yes, freeze {draft}"' in html
    assert not DatasetVersion.objects.get(pk=draft.pk).is_frozen  # reading freezes nothing


def test_confirming_freezes_with_the_note_and_audits_it(logged_in, editor, draft):
    client = logged_in(editor)
    seen = client.get(freeze_url(draft)).context["form"]["seen"].value()
    response = client.post(freeze_url(draft), {"seen": seen, "note": "Reviewed by QA."})
    assert response.status_code == 302
    assert response["Location"] == f"/admin/evaluations/datasetversion/{draft.pk}/change/"
    draft.refresh_from_db()
    assert draft.is_frozen and draft.frozen_by == editor and draft.note == "Reviewed by QA."
    entry = AuditEntry.objects.get(action="evaluations.dataset_version.freeze")
    assert entry.reason == "Reviewed by QA." and entry.actor_id == editor.pk
    assert entry.after["cases"] == 2


def test_a_draft_that_changed_since_it_was_read_is_shown_again_not_frozen(logged_in, editor, draft):
    client = logged_in(editor)
    seen = client.get(freeze_url(draft)).context["form"]["seen"].value()
    from evaluations.actions.create_case import CreateCase  # a third case arrives meanwhile

    CreateCase(acting_user=editor, dataset_version=draft, key="new-one", input="q").execute()
    response = client.post(freeze_url(draft), {"seen": seen, "note": "n"})
    html = response.content.decode()
    assert response.status_code == 200 and "The draft changed since you read this page" in html
    assert "<strong>3 cases</strong>" in html
    assert not DatasetVersion.objects.get(pk=draft.pk).is_frozen


def test_a_builder_cannot_freeze_and_is_told_why_on_the_page(logged_in, builder, draft):
    client = logged_in(builder)
    response = client.post(freeze_url(draft), {"seen": "2:2:0"}, follow=True)
    assert "Editor role needed" in response.content.decode()
    assert not DatasetVersion.objects.get(pk=draft.pk).is_frozen
    assert AuditEntry.objects.filter(action="evaluations.dataset_version.refused").exists()


def test_an_outsider_does_not_find_the_freeze_page(logged_in, outsider, draft):
    assert logged_in(outsider).get(freeze_url(draft)).status_code == 404


def test_a_version_without_cases_says_so_instead_of_confirming(logged_in, editor):
    empty = factories.dataset_version(factories.dataset("empty"), frozen=False)
    response = logged_in(editor).get(freeze_url(empty), follow=True)
    assert "A dataset version needs at least one case." in response.content.decode()


# --- a saved case leads back to its draft --------------------------------------------------------


def test_saving_a_new_case_returns_to_its_draft(logged_in, editor, draft):
    response = logged_in(editor).post(
        "/admin/evaluations/caseversion/add/",
        {"dataset_version": draft.pk, "key": "third", "input_format": "text", "input": "q"},
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert response["Location"] == f"/admin/evaluations/datasetversion/{draft.pk}/change/"


def test_saving_a_changed_case_returns_to_its_draft(logged_in, editor, draft):
    case = draft.case_versions.get(case__key="over-limit")
    client = logged_in(editor)
    form = client.get(f"/admin/evaluations/caseversion/{case.pk}/change/").context["adminform"]
    data = {name: value for name, value in form.form.initial.items() if value is not None}
    data.update(key="over-limit", input_format="text", input="Refund 301")
    response = client.post(f"/admin/evaluations/caseversion/{case.pk}/change/", data)
    assert response.status_code == 302
    assert response["Location"] == f"/admin/evaluations/datasetversion/{draft.pk}/change/"


def test_save_and_add_another_still_adds_another(logged_in, editor, draft):
    response = logged_in(editor).post(
        "/admin/evaluations/caseversion/add/",
        {
            "dataset_version": draft.pk,
            "key": "fourth",
            "input_format": "text",
            "input": "q",
            "_addanother": "1",
        },
    )
    assert response["Location"].startswith("/admin/evaluations/caseversion/add/")


def test_a_drafts_page_says_what_to_open_and_that_it_lacks_checks(logged_in, admin_user, draft):
    page = logged_in(admin_user).get(f"/admin/evaluations/datasetversion/{draft.pk}/change/")
    body = page.content.decode()
    assert 'or a check (its "View" link) below' in body and "No check yet" not in body
    empty = factories.dataset_version(factories.dataset("empty"), frozen=False)
    body = logged_in(admin_user).get(f"/admin/evaluations/datasetversion/{empty.pk}/change/")
    body = body.content.decode()
    assert "No check yet" in body and "below to edit" not in body


def test_the_confirmation_repeats_that_a_blocking_model_check_needs_a_judge(
    logged_in, editor, settings
):
    settings.SHERLOCK_JUDGE_BASE_URL = ""
    criterion = {
        "label": "Polite",
        "kind": "custom",
        "params": {"label": "Polite", "criterion": "The answer is polite.", "anchors": "0/1"},
        "threshold": 0.5,
    }
    draft = factories.dataset_version(
        factories.dataset("polite"),
        cases=[("hi", "Hello", {})],
        checks=[GOOD, criterion],
        frozen=False,
    )
    html = logged_in(editor).get(freeze_url(draft)).content.decode()
    assert 'id="freeze-no-judge"' in html
    assert (
        "Blocking model checks cannot be scored: Polite." in html
        and "Shape" not in html.split('id="freeze-no-judge"')[1].split("</li>")[0]
    )
    settings.SHERLOCK_JUDGE_BASE_URL = "http://127.0.0.1:9/v1"
    html = logged_in(editor).get(freeze_url(draft)).content.decode()
    assert 'id="freeze-no-judge"' not in html
