"""The pickers' answers (`/pick/<kind>/`, sherlock.core.pickers): the rows the person may see,
searched by every typed word, twenty a page, in a constant number of queries; and the widget,
which renders the chosen option only."""

import pytest
from django import forms
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import AgentVersion
from sherlock.core.pickers import Picker
from tests.support import factories
from tests.support.governance import grant_on

pytestmark = pytest.mark.django_db


def texts(client, kind, **query):
    answer = client.get(f"/pick/{kind}/", query)
    assert answer.status_code == 200, answer.content
    return [row["text"] for row in answer.json()["results"]]


def test_agents_are_searched_by_every_word_and_scoped_to_the_person(client, outsider):
    billing = factories.agent("billing-bot", name="Billing assistant")
    factories.agent("support-bot", name="Support")
    factories.agent("billing-archive", name="Old")
    viewer = grant_on(factories.user("viewer"), "Builder", billing)
    client.force_login(viewer)
    assert texts(client, "agent") == ["billing-bot"]
    assert texts(client, "agent", term="support") == []  # hidden, not found
    client.force_login(factories.user("everyone", role="Builder"))
    assert texts(client, "agent", term="billing") == ["billing-archive", "billing-bot"]
    assert texts(client, "agent", term="billing assist") == ["billing-bot"]
    assert texts(client, "agent", term="BILLING Old") == ["billing-archive"]
    client.force_login(outsider)
    assert texts(client, "agent") == []


def test_the_posted_value_is_the_id_or_the_slug_the_widget_asks_for(client, builder):
    bot = factories.agent("billing-bot")
    client.force_login(builder)
    assert client.get("/pick/agent/").json()["results"] == [{"id": bot.pk, "text": "billing-bot"}]
    by_slug = client.get("/pick/agent/", {"by": "slug"}).json()["results"]
    assert by_slug == [{"id": "billing-bot", "text": "billing-bot"}]
    refused = client.get("/pick/agent/", {"by": "name"})
    assert refused.status_code == 400 and "by: one of pk, slug" in refused.json()["detail"]
    assert client.get("/pick/run/", {"by": "slug"}).status_code == 400


def test_versions_by_number_agent_and_build_role(client, editor):
    bot, other = factories.agent("billing-bot"), factories.agent("support-bot")
    for _ in range(3):
        factories.agent_version(bot)
    factories.agent_version(other)
    client.force_login(editor)  # may see every agent, may build none
    assert texts(client, "agent-version", term="billing v2") == ["billing-bot v2 (draft)"]
    assert texts(client, "agent-version", agent=other.pk) == ["support-bot v1 (draft)"]
    assert texts(client, "agent-version-build") == []
    builder = grant_on(factories.user("b"), "Builder", bot)
    client.force_login(builder)
    assert texts(client, "agent-version-build") == [
        "billing-bot v3 (draft)",
        "billing-bot v2 (draft)",
        "billing-bot v1 (draft)",
    ]
    assert client.get("/pick/agent-version/", {"agent": "billing"}).status_code == 400


def test_dataset_versions_by_state_and_the_drafts_a_person_may_edit(client, builder, editor):
    basics = factories.dataset("support-basics")
    factories.dataset_version(basics)
    factories.dataset_version(basics, frozen=False)
    client.force_login(builder)
    assert texts(client, "dataset-version") == ["support-basics v2 (draft)", "support-basics v1"]
    assert texts(client, "dataset-version", state="frozen") == ["support-basics v1"]
    assert texts(client, "dataset-version", state="draft") == ["support-basics v2 (draft)"]
    assert texts(client, "dataset-draft") == []  # a Builder edits no dataset
    assert client.get("/pick/dataset-version/", {"state": "old"}).status_code == 400
    client.force_login(editor)
    assert texts(client, "dataset-draft", term="basics") == ["support-basics v2 (draft)"]


def test_runs_by_id_and_slug(client, builder, django_capture_on_commit_callbacks):
    version = factories.agent_version(factories.agent("billing-bot"))
    data = factories.dataset_version(cases=[("c1", "hello", {})])
    first = factories.start_run(builder, version, data, django_capture_on_commit_callbacks)
    second = factories.start_run(builder, version, data, django_capture_on_commit_callbacks)
    client.force_login(builder)
    assert [r["id"] for r in client.get("/pick/run/").json()["results"]] == [second.pk, first.pk]
    assert texts(client, "run", term=f"#{first.pk}") == [
        f"#{first.pk} billing-bot v1 on support-basics v1 ({first.status})"
    ]
    assert len(texts(client, "run", term="billing basics")) == 2
    # "v2" is a version's number, not run #2: the words the rows show find them.
    newer = factories.agent_version(version.agent)
    third = factories.start_run(builder, newer, data, django_capture_on_commit_callbacks)
    assert [
        r["id"] for r in client.get("/pick/run/", {"term": "billing v2"}).json()["results"]
    ] == [third.pk]
    assert len(texts(client, "run", term="billing v1")) == 3  # v1 of the dataset, too
    assert texts(client, "run", term="billing v3") == []
    client.force_login(factories.user("nobody"))
    assert texts(client, "run") == []


def test_pages_of_twenty_in_constant_queries(client, builder):
    client.force_login(builder)
    counts = {}
    for total in (3, 45):
        while factories.Agent.objects.count() < total:
            factories.agent(f"bot-{factories.Agent.objects.count():03}")
        with CaptureQueriesContext(connection) as queries:
            first = client.get("/pick/agent/").json()
        counts[total] = len(queries)
    assert counts[3] == counts[45]
    assert len(first["results"]) == 20 and first["pagination"]["more"] is True
    last = client.get("/pick/agent/", {"page": 3}).json()
    assert [r["text"] for r in last["results"]] == [
        "bot-040",
        "bot-041",
        "bot-042",
        "bot-043",
        "bot-044",
    ]
    assert last["pagination"]["more"] is False


def test_unknown_kinds_strangers_and_bad_pages(client, builder):
    assert client.get("/pick/agent/").status_code == 403
    assert client.get("/pick/users/").status_code == 403  # a stranger learns no kind's name
    client.force_login(builder)
    assert client.get("/pick/users/").status_code == 404
    for page in ("x", "99999999999999999999", "10001", "²"):
        answer = client.get("/pick/run/", {"page": page})
        assert answer.status_code == 400, page
        assert answer.json()["detail"] == "page: a whole number up to 10000"
    assert client.get("/pick/run/", {"page": "10000"}).json()["results"] == []
    answer = client.get("/pick/agent-version/", {"agent": "99999999999999999999"})
    assert answer.status_code == 400 and answer.json()["detail"].startswith("agent: a whole")


class VersionForm(forms.Form):
    version = forms.ModelChoiceField(
        AgentVersion.objects.select_related("agent"),
        widget=Picker("agent-version", depends=("agent",), placeholder="its live version"),
        required=False,
    )


def test_the_widget_renders_the_chosen_option_only():
    bot = factories.agent("billing-bot")
    versions = [factories.agent_version(bot) for _ in range(3)]
    html = str(VersionForm(initial={"version": versions[1].pk})["version"])
    assert 'class="sherlock-picker"' in html and 'data-ajax--url="/pick/agent-version/"' in html
    assert 'data-depends="agent"' in html and 'data-placeholder="its live version"' in html
    # The text the answers give the row (agents/pickers.py version_text), not str(version).
    assert f'<option value="{versions[1].pk}" selected>billing-bot v2 (draft)</option>' in html
    assert "billing-bot v1" not in html and "billing-bot v3" not in html
    assert html.count("<option") == 2  # the empty choice and the chosen one
    form = VersionForm({"version": versions[2].pk})
    assert form.is_valid() and form.cleaned_data["version"] == versions[2]
    assert "billing-bot v3" in str(form["version"])
    assert "<option" in str(VersionForm({"version": "nonsense"})["version"])  # no 500


def test_the_datasets_to_edit_are_those_of_the_editor_role(client, builder):
    mine, other = factories.dataset("billing-qa"), factories.dataset("billing-secret")
    editor = grant_on(factories.user("scoped-editor"), "Editor", mine)
    client.force_login(editor)
    assert texts(client, "dataset-to-edit", term="billing") == ["billing-qa"]
    client.force_login(builder)  # may see datasets, edits none
    assert texts(client, "dataset-to-edit") == [] and "billing-qa" in texts(client, "dataset")
    assert other.slug in texts(client, "dataset")


def test_a_picker_says_what_to_do_when_it_finds_nothing():
    html = Picker("dataset-draft").render("dataset_version", "")
    assert 'data-none="No draft you may edit matches: an Editor starts one with' in html
    assert "data-none" not in Picker("agent").render("agent", "")  # select2's own words


def test_the_template_tag_renders_a_filter_picker_with_its_own_text():
    from django.template import Context, Template

    html = Template(
        '{% load pickers %}{% picker "agent" "agent" value by="slug" placeholder="every agent" '
        "submit=True %}"
    ).render(Context({"value": "billing-bot"}))
    assert 'name="agent"' in html and 'id="id_agent"' in html and 'data-submit="true"' in html
    assert 'data-ajax--url="/pick/agent/?by=slug"' in html
    assert '<option value="billing-bot" selected>billing-bot</option>' in html
    assert '<option value="">every agent</option>' in html


@pytest.mark.parametrize(
    "url",
    [
        "/trends/",
        "/production/traces/",
        "/governance/versions/",
        "/labels/",
        "/runs/compare/",
        "/schedules/",
    ],
)
def test_the_filter_pages_list_no_agents_or_datasets_until_typed(client, url):
    for n in range(25):
        factories.agent(f"bot-{n:02}")
        factories.dataset(f"set-{n:02}")
    client.force_login(factories.user("everyone", role="Admin"))
    answer = client.get(url)
    assert answer.status_code == 200
    body = answer.content.decode()
    assert "sherlock-picker" in body and "sherlock/picker.js" in body
    assert "bot-07" not in body and "set-07" not in body


def test_the_admin_case_list_filters_by_a_dataset_typed_and_picked(client):
    """The case list's "By dataset" is a picker (PickerFilter): no dataset listed in the
    sidebar, the chosen one shown by its text, the other parameters kept in its form."""
    wanted = factories.dataset_version(
        factories.dataset("billing-qa"), cases=[("refund", "hi", {})]
    )
    for n in range(25):
        factories.dataset_version(factories.dataset(f"set-{n:02}"), cases=[(f"c{n}", "x", {})])
    client.force_login(factories.user("everyone", role="Admin"))
    listed = client.get("/admin/evaluations/case/").content.decode()
    assert ">c7<" in listed  # every dataset's cases, until one is picked
    sidebar = listed.split('id="changelist-filter"', 1)[1]
    assert "sherlock-picker" in sidebar and "set-07" not in sidebar
    assert 'data-ajax--url="/pick/dataset/"' in sidebar
    answer = client.get(
        "/admin/evaluations/case/", {"dataset__id__exact": wanted.dataset_id, "q": "ref"}
    )
    body = answer.content.decode()
    assert answer.status_code == 200 and ">refund<" in body and ">c7<" not in body
    assert f'<option value="{wanted.dataset_id}" selected>billing-qa</option>' in body
    assert '<input type="hidden" name="q" value="ref">' in body
