"""Who reads which runs, over every page and endpoint that shows one: a Builder of one agent
(its runs, on any dataset), an Editor of one dataset holding no agent (the runs on it), a global
Admin (everything) and a person with no role (nothing). Each role is tried on the run list, the
run and trial pages, compare, trends (and its agent picker), a model check's calibration, and
the API's runs, verdict, JUnit, trials and case results; then what each still may not do (start
a run of an agent one does not build)."""

import pytest

from evaluations.actions.start_run import StartRun
from evaluations.models import Run
from governance.models import GateDataset
from tests.support import factories
from tests.support.governance import api_client, grant_on

ECHO = "tests.support.agents_under_test.echo"
CHECKS = [
    {"label": "shape", "kind": "output_type", "params": {"type": "text"}},
    {
        "label": "polite",
        "kind": "custom",
        "params": {"label": "polite", "criterion": "The answer is polite.", "anchors": "0/1"},
        "threshold": 0.5,
        "mode": "informative",
    },
]


@pytest.fixture
def world(db, django_capture_on_commit_callbacks):
    admin = factories.user("ada", role="Admin")
    agent = factories.agent("acme-helpdesk")
    version = factories.agent_version(agent, number=1, callable_path=ECHO)
    faq = factories.dataset("acme-faq")
    frozen = factories.dataset_version(faq, cases=[("hello", "Hello?", {})], checks=CHECKS)
    GateDataset.objects.create(agent=agent, dataset=faq, chosen_by=admin)
    secret = factories.dataset_version(
        factories.dataset("secret"), cases=[("x", "?", {})], checks=CHECKS[:1]
    )
    other = factories.agent("other-bot")
    other_version = factories.agent_version(other, number=1, callable_path=ECHO)
    runs = []
    with django_capture_on_commit_callbacks(execute=True):
        for agent_version, dataset_version in (
            (version, frozen),
            (version, frozen),
            (version, secret),
            (other_version, frozen),
        ):
            runs.append(
                StartRun(
                    acting_user=None, agent_version=agent_version, dataset_version=dataset_version
                ).execute()
            )
    polite = frozen.checks.get(label="polite")
    return {
        "admin": admin,
        "builder": grant_on(factories.user("omar"), "Builder", agent),
        "editor": grant_on(factories.user("priya"), "Editor", faq),
        "viewer": grant_on(factories.user("vera"), "Viewer", faq),
        "agent_viewer": grant_on(factories.user("ava"), "Viewer", agent),
        "nobody": factories.user("nobody"),
        "agent": agent,
        "version": version,
        "frozen": frozen,
        "polite": polite,
        # on acme-faq: two of acme-helpdesk, one of other-bot; one of acme-helpdesk elsewhere
        "faq_runs": [runs[0], runs[1], runs[3]],
        "own_elsewhere": runs[2],
    }


def readable(world, who):
    """The runs `who` should read."""
    faq_runs, elsewhere = world["faq_runs"], world["own_elsewhere"]
    return {
        "admin": {*faq_runs, elsewhere},
        "builder": {faq_runs[0], faq_runs[1], elsewhere},  # the agent's runs, wherever
        "editor": set(faq_runs),  # the runs on the dataset, whoever's agent
        "viewer": set(faq_runs),  # a Viewer of the dataset reads as its Editor does
        "agent_viewer": {faq_runs[0], faq_runs[1], elsewhere},  # the agent's runs
        "nobody": set(),
    }[who]


@pytest.mark.parametrize("who", ["admin", "builder", "editor", "viewer", "agent_viewer", "nobody"])
def test_each_role_reads_its_runs_on_every_surface(client, world, who):
    user = world[who]
    client.force_login(user)
    api = api_client(user)
    shown = readable(world, who)
    every = {*world["faq_runs"], world["own_elsewhere"]}

    listed = client.get("/runs/").content.decode()
    listed_api = {row["id"] for row in api.get("/api/v1/runs/").json()["results"]}
    assert listed_api == {run.pk for run in shown}
    for run in every:
        expected = 200 if run in shown else 404
        assert (f'href="/runs/{run.pk}/"' in listed) == (run in shown), (who, run.pk)
        assert client.get(f"/runs/{run.pk}/").status_code == expected, (who, "page", run.pk)
        key = run.dataset_version.case_versions.get().case.key
        trial_page = client.get(f"/runs/{run.pk}/cases/{key}/")
        assert trial_page.status_code == expected, (who, "trial", run.pk)
        for path in ("", "verdict/", "junit/"):
            answer = api.get(f"/api/v1/runs/{run.pk}/{path}")
            assert answer.status_code == expected, (who, path, run.pk)
        trials = api.get(f"/api/v1/trials/?run={run.pk}").json()["results"]
        assert bool(trials) == (run in shown), (who, "trials", run.pk)

    a, b = world["faq_runs"][0], world["faq_runs"][1]
    compared = client.get(f"/runs/compare/?a={a.pk}&b={b.pk}")
    assert (compared.status_code == 200) == (a in shown and b in shown), who
    if a in shown:
        assert f"/runs/{b.pk}/" in compared.content.decode()

    trends = client.get("/trends/?agent=acme-helpdesk&dataset=acme-faq").content.decode()
    assert (f"/runs/{a.pk}/" in trends) == (a in shown), (who, "trends")
    picked = client.get("/pick/agent-with-runs/?term=acme").json()["results"]
    assert bool(picked) == bool(shown), (who, "the trends page's agent picker")

    # A model check's calibration is its dataset's: read by whoever may see the dataset.
    calibration = client.get(f"/checks/{world['polite'].pk}/calibration/")
    sees_dataset = who in ("admin", "editor", "viewer")
    assert calibration.status_code == (200 if sees_dataset else 404), who


@pytest.mark.parametrize("who", ["editor", "viewer", "agent_viewer", "nobody"])
def test_reading_a_run_is_no_right_to_start_one(world, who):
    answer = api_client(world[who]).post(
        "/api/v1/runs/",
        {"agent_version": world["version"].pk, "dataset_version": world["frozen"].pk},
        format="json",
    )
    assert answer.status_code in (400, 403, 404), answer.content
    assert Run.objects.count() == 4


@pytest.mark.parametrize("who", ["viewer", "agent_viewer"])
def test_a_viewer_changes_nothing(world, who):
    """A Viewer edits no case, freezes nothing, builds no version, requests no publication."""
    api = api_client(world[who])
    frozen = world["frozen"]
    cases = [{"key": "new-case", "input": "hi"}]
    imported = api.post("/api/v1/datasets/acme-faq/draft/import/", cases, format="json")
    assert imported.status_code in (403, 404), imported.content
    assert not frozen.dataset.versions.filter(case_versions__case__key="new-case").exists()
    check = frozen.checks.get(label="shape")
    assert api.patch(f"/api/v1/checks/{check.pk}/", {"threshold": 0.5}).status_code in (403, 404)
    made = api.post(
        "/api/v1/versions/",
        {"agent": "acme-helpdesk", "adapter": "python", "config": {"callable": ECHO}},
        format="json",
    )
    assert made.status_code in (400, 403)
    asked = api.post(f"/api/v1/versions/{world['version'].pk}/request-publication/", {})
    assert asked.status_code in (403, 404)
    assert world["agent"].versions.count() == 1


def test_a_builder_runs_on_a_dataset_it_views(world, django_capture_on_commit_callbacks):
    """The Viewer role on a dataset, beside the Builder role on an agent: running that agent on
    it is allowed (reading a dataset is enough to run on it), editing it is not."""
    builder = grant_on(factories.user("bea"), "Builder", world["agent"])
    secret = factories.dataset_version(
        factories.dataset("shared-qa"), cases=[("q", "?", {})], checks=CHECKS[:1]
    )
    api = api_client(builder)
    body = {"agent_version": world["version"].pk, "dataset_version": secret.pk}
    assert api.post("/api/v1/runs/", body, format="json").status_code in (400, 403, 404)
    viewer = grant_on(builder, "Viewer", secret.dataset)
    with django_capture_on_commit_callbacks(execute=True):
        started = api_client(viewer).post("/api/v1/runs/", body, format="json")
    assert started.status_code == 201, started.content
    imported = api_client(viewer).post(
        "/api/v1/datasets/shared-qa/draft/import/", [{"key": "new", "input": "?"}], format="json"
    )
    assert imported.status_code in (403, 404), imported.content
    listed = api_client(viewer).get("/api/v1/datasets/?slug=shared-qa").json()["results"]
    assert [d["slug"] for d in listed] == ["shared-qa"]  # the Viewer reads it
