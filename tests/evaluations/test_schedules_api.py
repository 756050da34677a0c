"""The schedules API: create with its estimate, change, pause, delete, in the one error shape;
the verbs decide who may (a Publisher is refused with 403)."""

from evaluations.models import RunSchedule
from tests.support import factories
from tests.support.schedules import OWNED


def body(pair, **fields):
    agent, _, dataset, _ = pair
    return {"agent": agent.slug, "dataset": dataset.slug, "interval_minutes": 60, **fields}


def test_a_builder_creates_sees_the_estimate_pauses_and_deletes(builder, pair):
    client = factories.api(builder)
    created = client.post("/api/v1/schedules/", body(pair, repetitions=2), format="json")
    assert created.status_code == 201, created.json()
    data = created.json()
    assert data["estimate"]["runs_per_month"] == 720
    assert data["estimate"]["per_run"]["trials"] == 4
    assert data["next_run"] and data["created_by"] == "builder"
    changed = client.patch(
        f"/api/v1/schedules/{data['id']}/",
        {"cron": "0 6 * * *", "interval_minutes": None},
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    assert changed.json()["estimate"]["runs_per_month"] in (30, 31)
    factories.agent("other-bot")
    other = client.patch(f"/api/v1/schedules/{data['id']}/", {"agent": "other-bot"}, format="json")
    assert other.status_code == 400  # a schedule of another pair is a new schedule
    assert other.json()["field"] == "agent"
    paused = client.post(f"/api/v1/schedules/{data['id']}/pause/")
    assert paused.json()["active"] is False and paused.json()["next_run"] is None
    assert client.post(f"/api/v1/schedules/{data['id']}/resume/").json()["active"] is True
    assert client.delete(f"/api/v1/schedules/{data['id']}/").status_code == 204
    assert not RunSchedule.objects.exists() and not OWNED().exists()


def test_a_bad_cron_is_a_400_naming_the_field(builder, pair):
    answer = factories.api(builder).post(
        "/api/v1/schedules/", body(pair, cron="every day", interval_minutes=None), format="json"
    )
    assert answer.status_code == 400
    assert answer.json()["field"] == "cron"
    assert not RunSchedule.objects.exists()


def test_a_publisher_is_refused(publisher, pair):
    answer = factories.api(publisher).post("/api/v1/schedules/", body(pair), format="json")
    assert answer.status_code == 403
    assert "Editor" in answer.json()["detail"]
    assert not RunSchedule.objects.exists()
