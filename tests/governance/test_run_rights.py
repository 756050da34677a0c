"""Running is a right of its own: a Builder of one agent runs it on the datasets it is gated on
(chosen by an Admin), from every surface (the API, `evaluate --user`, the client's run start,
the start-run picker and the schedule form), without any right to see the dataset otherwise or
to edit its cases; a Builder of another agent may not run on them; runs on a dataset the Builder
may not see open for them (the agent's runs are theirs)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluations.models import Run
from evaluations.reads.run_rights import may_run_on, runnable_datasets
from governance.models import GateDataset
from tests.support import factories
from tests.support.governance import api_client, grant_on

ECHO = "tests.support.agents_under_test.echo"
CHECKS = [{"label": "shape", "kind": "output_type", "params": {"type": "text"}}]


@pytest.fixture
def team():
    admin = factories.user("ada", role="Admin")
    agent = factories.agent("acme-helpdesk")
    version = factories.agent_version(agent, number=1, callable_path=ECHO)
    faq = factories.dataset("acme-faq")
    frozen = factories.dataset_version(faq, cases=[("hello", "Hello?", {})], checks=CHECKS)
    GateDataset.objects.create(agent=agent, dataset=faq, chosen_by=admin)
    omar = grant_on(factories.user("omar"), "Builder", agent)
    other = factories.agent("other-bot")
    factories.agent_version(other, number=1, callable_path=ECHO)
    stranger = grant_on(factories.user("stranger"), "Builder", other)
    return {
        "agent": agent,
        "version": version,
        "faq": faq,
        "frozen": frozen,
        "omar": omar,
        "other": other,
        "stranger": stranger,
    }


def test_the_right_follows_the_gate_datasets(db, team):
    omar, faq = team["omar"], team["faq"]
    assert may_run_on(omar, team["agent"], faq)
    assert not may_run_on(omar, team["other"], faq)  # not an agent he builds
    assert not may_run_on(team["stranger"], team["other"], faq)  # not gated on it
    assert list(runnable_datasets(omar, team["agent"])) == [faq]
    assert list(runnable_datasets(omar, team["other"])) == []


def test_a_builder_runs_the_agent_on_its_gate_dataset_through_the_api(
    db, team, django_capture_on_commit_callbacks
):
    api = api_client(team["omar"])
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(
            "/api/v1/runs/",
            {"agent_version": team["version"].pk, "dataset_version": team["frozen"].pk},
            format="json",
        )
    assert answer.status_code == 201, answer.content
    run = Run.objects.get(pk=answer.json()["id"])
    assert run.dataset_version == team["frozen"]
    # The run is his (his agent's): its page and its trials open.
    assert api.get(f"/api/v1/runs/{run.pk}/").status_code == 200
    # Running it is no right to read or edit the dataset itself.
    assert api.get("/api/v1/datasets/?slug=acme-faq").json()["results"] == []
    imported = api.post(
        "/api/v1/datasets/acme-faq/draft/import/", [{"key": "x", "input": "?"}], format="json"
    )
    assert imported.status_code in (403, 404), imported.content


def test_a_builder_of_another_agent_may_not(db, team):
    answer = api_client(team["stranger"]).post(
        "/api/v1/runs/",
        {"agent_version": team["version"].pk, "dataset_version": team["frozen"].pk},
        format="json",
    )
    assert answer.status_code == 400  # his agent version and the dataset: neither his


def test_evaluate_user_runs_the_gate_dataset(live_db, team):
    out = StringIO()
    try:
        call_command(
            "evaluate", "acme-helpdesk", "--dataset", "acme-faq", "--user", "omar", stdout=out
        )
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    except CommandError as error:
        pytest.fail(f"evaluate refused: {error}")
    assert code in (0, 1), out.getvalue()  # it ran (pass or fail is the contract's)
    assert Run.objects.filter(dataset_version=team["frozen"]).exists()
    with pytest.raises(CommandError, match="may see or run"):
        call_command(
            "evaluate", "other-bot", "--dataset", "acme-faq", "--user", "stranger", stdout=out
        )


def test_the_clients_run_start_takes_the_gate_dataset(db, team):
    answer = api_client(team["omar"]).post(
        "/api/v1/runs/client/",
        {"agent": "acme-helpdesk", "version": "ci-main", "dataset": "acme-faq"},
        format="json",
    )
    # The version is created for the client by name, or refused as not a client version: the
    # dataset was found either way (a dataset he may not run on answers "no dataset").
    assert "no dataset" not in json.dumps(answer.json()), answer.content


def test_the_pickers_and_forms_offer_the_gate_dataset(db, client, team):
    client.force_login(team["omar"])
    found = client.get("/pick/dataset-version-to-run/", {"term": "acme"}).content.decode()
    assert "acme-faq" in found
    assert "acme-faq" not in client.get("/pick/dataset/", {"term": "acme"}).content.decode()
    schedules = client.get("/pick/dataset-to-run/", {"term": "acme"}).content.decode()
    assert "acme-faq" in schedules
    client.force_login(team["stranger"])
    assert (
        "acme-faq"
        not in client.get("/pick/dataset-version-to-run/", {"term": "acme"}).content.decode()
    )


def test_what_a_builder_may_run_costs_the_same_queries_for_many_agents(
    db, team, django_assert_max_num_queries
):
    from evaluations.reads.run_rights import datasets_to_run

    omar = team["omar"]
    with django_assert_max_num_queries(10) as few:
        assert list(datasets_to_run(omar)) == [team["faq"]]
    for n in range(4):
        agent = factories.agent(f"more-{n}")
        dataset = factories.dataset(f"gate-{n}")
        GateDataset.objects.create(agent=agent, dataset=dataset)
        grant_on(omar, "Builder", agent)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert len(datasets_to_run(omar)) == 5


def test_an_editor_of_a_dataset_reads_the_runs_on_it(
    db, client, team, django_capture_on_commit_callbacks
):
    """priya edits acme-faq and holds no agent: the runs on acme-faq are listed for her, their
    pages and trials open (through the API too); runs on other datasets stay hidden, and she
    may still not start a run."""
    with django_capture_on_commit_callbacks(execute=True):
        api_client(team["omar"]).post(
            "/api/v1/runs/",
            {"agent_version": team["version"].pk, "dataset_version": team["frozen"].pk},
            format="json",
        )
    run = Run.objects.get()
    elsewhere = factories.dataset_version(
        factories.dataset("secret"), cases=[("x", "?", {})], checks=CHECKS
    )
    from evaluations.actions.start_run import StartRun

    with django_capture_on_commit_callbacks(execute=True):
        hidden = StartRun(
            acting_user=None, agent_version=team["version"], dataset_version=elsewhere
        ).execute()
    priya = grant_on(factories.user("priya"), "Editor", team["faq"])
    client.force_login(priya)
    listed = client.get("/runs/").content.decode()
    assert f"/runs/{run.pk}/" in listed and f"/runs/{hidden.pk}/" not in listed
    assert "Start a run" not in listed
    assert client.get(f"/runs/{run.pk}/").status_code == 200
    assert client.get(f"/runs/{run.pk}/cases/hello/").status_code == 200
    assert client.get(f"/runs/{hidden.pk}/").status_code == 404
    ids = [row["id"] for row in api_client(priya).get("/api/v1/runs/").json()["results"]]
    assert ids == [run.pk]
