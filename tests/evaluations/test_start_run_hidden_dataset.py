"""StartRun refuses a dataset version its user may not see, as one that does not exist: every
surface lists only visible datasets, and the action is the one judge (a Builder of one agent
naming another team's dataset by id through the API, `evaluate` or a schedule)."""

import pytest

from evaluations.actions.start_run import StartRun
from evaluations.models import Run
from sherlock.core.errors import ActionInvalid
from tests.support import factories
from tests.support.governance import grant_on


@pytest.fixture
def world(db):
    agent = factories.agent("scoped-bot")
    version = factories.agent_version(agent)
    mine = factories.dataset_version(factories.dataset("mine"), cases=[("a", "x", {})])
    theirs = factories.dataset_version(factories.dataset("theirs"), cases=[("a", "x", {})])
    builder = grant_on(factories.user("scoped-builder"), "Builder", agent)
    builder = grant_on(builder, "Editor", mine.dataset)
    return builder, version, mine, theirs


def test_a_hidden_dataset_version_reads_as_missing_and_starts_nothing(world):
    builder, version, _, theirs = world
    with pytest.raises(ActionInvalid) as refused:
        StartRun(acting_user=builder, agent_version=version, dataset_version=theirs).execute()
    assert refused.value.field == "dataset_version"
    assert "no such dataset version, or one you may not see" in str(refused.value)
    assert not Run.objects.exists()


def test_a_visible_one_starts(world):
    builder, version, mine, _ = world
    run = StartRun(acting_user=builder, agent_version=version, dataset_version=mine).execute()
    assert run.dataset_version == mine


def test_the_api_answers_400_on_the_field(world):
    builder, version, _, theirs = world
    response = factories.api(builder).post(
        "/api/v1/runs/",
        {"agent_version": version.pk, "dataset_version": theirs.pk},
        format="json",
    )
    assert response.status_code == 400
    assert "dataset_version" in str(response.json())
    assert not Run.objects.exists()
