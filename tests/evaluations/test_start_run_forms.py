"""Starting a run where people work: the admin's "Start a run…" on agent versions
and "Run an agent on it…" on dataset versions, and the run list's form. Each shows the estimate
(calls, "price missing (N calls)") before the person confirms, starts through StartRun, and is
offered only to those who may start runs."""

import html
import re

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from guardian.shortcuts import assign_perm

from evaluations.models import ModelPrice, Run
from governance.models import AuditEntry, PublishingPolicy
from tests.support import factories

SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}
AGENT_VERSIONS = "/admin/agents/agentversion/"
DATASET_VERSIONS = "/admin/evaluations/datasetversion/"


@pytest.fixture
def version(db):
    return factories.agent_version()


@pytest.fixture
def dataset_version(db):
    return factories.dataset_version(cases=[("c1", "hi", {}), ("c2", "yo", {})], checks=[SHAPE])


def logged_in(client, user, password):
    client.login(username=user.username, password=password)
    return client


def estimated_key(page):
    return re.search(r'name="estimated" value="([^"]*)"', page).group(1)


def test_a_builder_starts_a_run_from_an_agent_version_after_seeing_the_estimate(
    client, builder, password, version, dataset_version, django_capture_on_commit_callbacks
):
    logged_in(client, builder, password)
    base = {"action": "start_run", ACTION_CHECKBOX_NAME: [version.pk]}
    page = client.post(AGENT_VERSIONS, base).content.decode()
    assert "Start a run" in page and 'name="dataset_version"' in page
    assert 'name="agent_version"' not in page  # the selected rows are that side
    assert not Run.objects.exists()

    choice = {**base, "dataset_version": dataset_version.pk, "repetitions": 2}
    page = client.post(AGENT_VERSIONS, {**choice, "estimate": "1"}).content.decode()
    assert "Estimate before you start" in page
    assert "price missing (4 calls)" in page and "$0.0000" not in page
    assert not Run.objects.exists()  # nothing starts before the confirmation

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            AGENT_VERSIONS, {**choice, "apply": "1", "estimated": estimated_key(page)}, follow=True
        )
    run = Run.objects.get()
    assert (run.agent_version, run.dataset_version, run.repetitions) == (
        version,
        dataset_version,
        2,
    )
    assert run.requested_by == builder and run.status == "completed"
    assert f"run #{run.pk}</a> started" in response.content.decode()
    assert AuditEntry.objects.filter(action="evaluations.run.start", actor=builder).exists()


def test_changed_choices_are_estimated_again_instead_of_started(
    client, builder, password, version, dataset_version
):
    logged_in(client, builder, password)
    base = {"action": "start_run", ACTION_CHECKBOX_NAME: [version.pk]}
    choice = {**base, "dataset_version": dataset_version.pk, "repetitions": 1}
    page = client.post(AGENT_VERSIONS, {**choice, "estimate": "1"}).content.decode()
    key = estimated_key(page)
    page = client.post(
        AGENT_VERSIONS, {**choice, "repetitions": 5, "apply": "1", "estimated": key}
    ).content.decode()
    assert not Run.objects.exists()
    assert "Estimate before you start" in page and "10 (0)" in page  # 2 cases x 5


def test_a_builder_runs_an_agent_on_a_dataset_version(
    client, builder, password, version, dataset_version, django_capture_on_commit_callbacks
):
    logged_in(client, builder, password)
    base = {"action": "start_run", ACTION_CHECKBOX_NAME: [dataset_version.pk]}
    page = client.post(DATASET_VERSIONS, base).content.decode()
    assert "Run an agent on it" in page and 'name="agent_version"' in page
    choice = {**base, "agent_version": version.pk, "repetitions": 1}
    page = client.post(DATASET_VERSIONS, {**choice, "estimate": "1"}).content.decode()
    assert "price missing (2 calls)" in page
    with django_capture_on_commit_callbacks(execute=True):
        client.post(DATASET_VERSIONS, {**choice, "apply": "1", "estimated": estimated_key(page)})
    assert Run.objects.get().agent_version == version


def test_a_refusal_is_a_message_on_the_estimate_and_nothing_starts(
    client, builder, password, version
):
    empty = factories.dataset_version(factories.dataset("empty"), cases=[])
    logged_in(client, builder, password)
    base = {"action": "start_run", ACTION_CHECKBOX_NAME: [version.pk]}
    choice = {**base, "dataset_version": empty.pk, "repetitions": 1}
    page = client.post(AGENT_VERSIONS, {**choice, "estimate": "1"}).content.decode()
    assert "the dataset version has no cases" in page
    assert 'name="apply"' not in page  # nothing that may start: no start button
    response = client.post(
        AGENT_VERSIONS, {**choice, "apply": "1", "estimated": estimated_key(page)}, follow=True
    )
    assert "the dataset version has no cases" in response.content.decode()
    assert not Run.objects.exists()


@pytest.mark.parametrize("persona", ["editor", "publisher"])
def test_the_admin_actions_are_offered_only_to_who_may_start_runs(
    request, client, password, persona, version, dataset_version
):
    user = request.getfixturevalue(persona)
    logged_in(client, user, password)
    for url in (AGENT_VERSIONS, DATASET_VERSIONS):
        page = client.get(url).content.decode()
        assert 'value="start_run"' not in page
        client.post(
            url,
            {
                "action": "start_run",
                ACTION_CHECKBOX_NAME: [version.pk if url == AGENT_VERSIONS else dataset_version.pk],
            },
        )
    assert not Run.objects.exists()


def test_the_admin_actions_are_offered_to_a_builder(
    client, builder, password, version, dataset_version
):
    logged_in(client, builder, password)
    assert 'value="start_run"' in client.get(AGENT_VERSIONS).content.decode()
    assert 'value="start_run"' in client.get(DATASET_VERSIONS).content.decode()


# --- the run list's form -----------------------------------------------------------------


def test_the_run_list_offers_the_form_to_a_builder_only(
    client, builder, publisher, editor, password, version, dataset_version
):
    page = logged_in(client, builder, password).get("/runs/").content.decode()
    assert "Start a run" in page and 'data-ajax--url="/pick/agent-version-build/"' in page
    assert str(version) not in page  # typed and picked, never listed
    assert [row["text"] for row in client.get("/pick/agent-version-build/").json()["results"]] == [
        f"{version} ({version.state})"
    ]
    picked = client.get("/pick/dataset-version/").json()["results"]
    assert [row["id"] for row in picked] == [dataset_version.pk]
    page = client.get("/runs/start/").content.decode()  # the same form on its own page
    assert "<h1>Start a run</h1>" in page and 'name="estimate"' in page
    for user in (publisher, editor):
        client.logout()
        page = logged_in(client, user, password).get("/runs/").content.decode()
        assert "Start a run" not in page and "Runs" in page
        page = client.post("/runs/start/", {"estimate": "1"}).content.decode()
        assert "You may not start runs" in page
        # An Editor may schedule runs of their datasets (docs/schedules.md): the page says where.
        assert ("under Schedules" in page) == (user == editor)


def test_the_run_list_form_estimates_then_starts_the_run(
    client, builder, password, version, dataset_version, django_capture_on_commit_callbacks
):
    logged_in(client, builder, password)
    choice = {"agent_version": version.pk, "dataset_version": dataset_version.pk}
    page = client.post(
        "/runs/start/", {**choice, "repetitions": 1, "estimate": "1"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert page.lstrip().startswith(("<section", "\n<section")) or "<html" not in page
    assert "price missing (2 calls)" in page and 'name="confirm"' in page
    assert not Run.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/runs/start/",
            {**choice, "repetitions": 1, "confirm": "1", "estimated": estimated_key(page)},
            HTTP_HX_REQUEST="true",
        )
    run = Run.objects.get()
    assert response.headers["HX-Redirect"] == f"/runs/{run.pk}/"
    assert run.requested_by == builder


def test_a_scoped_builder_chooses_only_among_its_own_agents(
    client, password, version, dataset_version
):
    other = factories.agent_version(factories.agent("other-bot"))
    scoped = factories.user("scoped")
    assign_perm("agents.view_agent", scoped, version.agent)
    assign_perm("agents.build_agent", scoped, version.agent)
    assign_perm("evaluations.view_dataset", scoped, dataset_version.dataset)
    logged_in(client, scoped, password)
    offered = client.get("/pick/agent-version-build/").json()["results"]
    assert [row["id"] for row in offered] == [version.pk]  # never other-bot's
    page = client.post(
        "/runs/start/",
        {
            "agent_version": other.pk,
            "dataset_version": dataset_version.pk,
            "repetitions": 1,
            "estimate": "1",
        },
    ).content.decode()
    assert "Select a valid choice" in page
    assert not Run.objects.exists()


def test_the_start_page_opens_with_its_form_open_and_the_run_list_folds_it(
    client, builder, password, version, dataset_version
):
    logged_in(client, builder, password)
    disclosure = re.compile(r"<details\s*(open)?\s*>")
    start = disclosure.search(client.get("/runs/start/").content.decode())
    assert start and start.group(1) == "open"  # on its own page the form is the page
    listing = disclosure.search(client.get("/runs/").content.decode())
    assert listing and listing.group(1) is None  # on the run list it waits to be opened
    # Its own page's heading says "Start a run"; the folded form's summary says it on the list.
    page = client.get("/runs/start/").content.decode()
    assert page.count("Start a run</") == 1 and "<h1>Start a run</h1>" in page
    assert "<summary><b>Start a run</b>" in client.get("/runs/").content.decode()


# --- the estimate of calls without a price ----------------------------------------------------

POLITE = {"label": "Polite", "kind": "custom", "params": {"criterion": "polite"}}


@pytest.fixture
def judged(settings):
    """A judge is configured (the estimate counts its calls); nothing is called."""
    settings.SHERLOCK_JUDGE_BASE_URL = "http://127.0.0.1:9/v1"
    settings.SHERLOCK_JUDGE_MODEL = "unpriced-judge"


def estimate_of(client, version, dataset_version):
    choice = {"agent_version": version.pk, "dataset_version": dataset_version.pk}
    response = client.post("/runs/start/", {**choice, "repetitions": 1, "estimate": "1"})
    assert response.status_code == 200
    return html.unescape(re.sub(r"\s+", " ", response.content.decode()))


def test_an_unpriced_judge_shows_the_known_cost_too_and_warns_of_the_coverage_gate(
    client, builder, password, version, judged
):
    from tests.support.contract_runs import add_trial, empty_run

    add_trial(empty_run(agent_version=version), cost_usd="0.10")  # the agent's cost history
    dataset_version = factories.dataset_version(
        factories.dataset("polite"), cases=[("c1", "hi", {}), ("c2", "yo", {})], checks=[POLITE]
    )
    logged_in(client, builder, password)

    page = estimate_of(client, version, dataset_version)
    cost = page.split('id="start-estimate"', 1)[1].split("</table>", 1)[0]
    # The known part, as the run's own page will show it, not only "price missing".
    assert "$0.20 + price missing (2 calls)" in cost
    warning = page.split('id="start-coverage-warning"', 1)[1].split("</p>", 1)[0]
    assert "Judge calls without a price (unpriced-judge)" in warning
    assert "the contract's coverage gate will fail" in warning
    assert "An Admin sets a price under Admin > Evaluations > Model prices." in warning
    assert 'href="/admin/evaluations/modelprice/"' in warning
    assert 'name="confirm"' in page  # a warning, not a refusal

    ModelPrice.objects.create(
        model="unpriced-judge", usd_per_million_input=1, usd_per_million_output=1
    )
    priced = estimate_of(client, version, dataset_version)
    assert 'id="start-coverage-warning"' not in priced and "price missing" not in priced


def test_no_coverage_warning_when_the_policy_in_force_waives_the_coverage_gate(
    client, builder, password, version, dataset_version
):
    logged_in(client, builder, password)
    # The agent has neither a price nor a cost history: it must report its billed cost.
    page = estimate_of(client, version, dataset_version)
    warning = page.split('id="start-coverage-warning"', 1)[1]
    assert "Agent calls without a price or a cost history" in warning
    assert "fail unless the agent reports its billed cost" in warning

    PublishingPolicy.objects.create(name="No coverage", version=1, coverage_required=False)
    assert 'id="start-coverage-warning"' not in estimate_of(client, version, dataset_version)


def test_the_admin_estimate_warns_of_the_coverage_gate_too(
    client, builder, password, version, dataset_version
):
    logged_in(client, builder, password)
    base = {"action": "start_run", ACTION_CHECKBOX_NAME: [version.pk]}
    choice = {**base, "dataset_version": dataset_version.pk, "repetitions": 1}
    page = html.unescape(client.post(AGENT_VERSIONS, {**choice, "estimate": "1"}).content.decode())
    assert "the contract's coverage gate will fail unless the agent reports" in page
