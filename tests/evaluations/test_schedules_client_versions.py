"""A schedule never runs a `client` version: its code runs in the team's CI, and a run a
schedule started would wait for uploads that nobody sends (docs/schedules.md). The schedule
verbs refuse it, pinned or live, so the page, the API and the admin all say why on the field;
a schedule whose agent's live version became a client version after it was saved records why
it did not fire, and starts nothing."""

import pytest

from agents.models import AgentVersion
from evaluations.actions.fire_schedule import fire
from evaluations.models import Run, RunSchedule
from sherlock.core.errors import ActionInvalid
from tests.support import factories
from tests.support.schedules import OWNED, create

SENTENCE = "runs on the client"


@pytest.fixture
def client_version(pair):
    agent = pair[0]
    return AgentVersion.objects.create(
        agent=agent, number=agent.versions.count() + 1, name="abc123", adapter="client", config={}
    )


def go_live(version):
    version.agent.live_version = version
    version.agent.save(update_fields=["live_version"])


def test_a_pinned_client_version_is_refused_on_its_field(builder, pair, client_version):
    with pytest.raises(ActionInvalid) as refused:
        create(builder, pair, agent_version=client_version)
    error = refused.value
    assert error.field == "agent_version" and error.code == "client_version"
    assert SENTENCE in str(error) and "sherlock run" in str(error)
    assert not RunSchedule.objects.exists() and not OWNED().exists()


def test_a_live_client_version_is_refused_on_the_agent(builder, pair, client_version):
    go_live(client_version)
    with pytest.raises(ActionInvalid) as refused:
        create(builder, pair)
    assert f"the live version {client_version} {SENTENCE}" in str(refused.value)
    assert not RunSchedule.objects.exists()


def test_a_version_sherlock_runs_itself_may_still_be_pinned(builder, pair, client_version):
    go_live(client_version)
    schedule = create(builder, pair, agent_version=pair[1])  # the python version
    assert schedule.agent_version == pair[1]


def test_the_api_answers_400_naming_the_field(builder, pair, client_version):
    agent, _, dataset, _ = pair
    answer = factories.api(builder).post(
        "/api/v1/schedules/",
        {
            "agent": agent.slug,
            "dataset": dataset.slug,
            "agent_version": client_version.pk,
            "interval_minutes": 60,
        },
        format="json",
    )
    assert answer.status_code == 400, answer.json()
    assert answer.json()["field"] == "agent_version"
    assert SENTENCE in answer.json()["detail"]
    assert not RunSchedule.objects.exists()


def test_the_page_shows_it_on_the_form(logged_in, builder, pair, client_version):
    go_live(client_version)
    agent, _, dataset, _ = pair
    shown = logged_in(builder).post(
        "/schedules/",
        {
            "agent": agent.pk,
            "dataset": dataset.pk,
            "repetitions": 1,
            "interval_minutes": 60,
            "estimate": "",
        },
    )
    assert shown.status_code == 200
    assert SENTENCE in shown.content.decode()
    assert not RunSchedule.objects.exists()


def test_the_admin_shows_it_as_a_message(logged_in, builder, pair, client_version):
    agent, _, dataset, _ = pair
    response = logged_in(builder).post(
        "/admin/evaluations/runschedule/add/",
        {
            "agent": agent.pk,
            "agent_version": client_version.pk,
            "dataset": dataset.pk,
            "dataset_version": "",
            "repetitions": 1,
            "cron": "0 6 * * *",
            "interval_minutes": "",
            "active": "on",
        },
    )
    assert response.status_code == 200
    assert SENTENCE in response.content.decode()
    assert not RunSchedule.objects.exists()


def test_a_live_version_that_became_a_client_version_is_not_run(builder, pair, client_version):
    schedule = create(builder, pair)
    go_live(client_version)
    assert fire(schedule.pk) is None
    schedule.refresh_from_db()
    assert f"the live version {client_version} {SENTENCE}" in schedule.last_error
    assert schedule.last_fired_at and not Run.objects.exists()


def test_such_a_schedule_may_be_paused_but_not_resumed(builder, pair, client_version):
    from evaluations.actions.pause_schedule import PauseSchedule, ResumeSchedule
    from evaluations.actions.update_schedule import UpdateSchedule

    schedule = create(builder, pair)
    go_live(client_version)
    api = factories.api(builder)
    paused = api.patch(f"/api/v1/schedules/{schedule.pk}/", {"active": False}, format="json")
    assert paused.status_code == 200, paused.json()  # stopping it is always allowed
    with pytest.raises(ActionInvalid) as refused:
        ResumeSchedule(acting_user=builder, schedule=schedule).execute()
    assert refused.value.code == "client_version" and refused.value.field == "agent"
    with pytest.raises(ActionInvalid):
        UpdateSchedule(acting_user=builder, schedule=schedule, active=True).execute()
    schedule.refresh_from_db()
    assert not schedule.active and OWNED().get().repeats == 0
    PauseSchedule(acting_user=builder, schedule=schedule).execute()  # pausing again: fine
