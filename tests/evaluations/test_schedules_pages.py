"""The schedules page: estimate first (per run and per month), save only what was estimated,
pause/resume/delete from the list; a Publisher sees the refusal as a message."""

from evaluations.models import RunSchedule
from tests.support.schedules import create


def form(pair, **fields):
    agent, _, dataset, _ = pair
    return {
        "agent": agent.pk,
        "dataset": dataset.pk,
        "repetitions": 1,
        "cron": "",
        "interval_minutes": 60,
        **fields,
    }


def test_estimate_then_save(logged_in, editor, pair):
    client = logged_in(editor)
    shown = client.post("/schedules/", {**form(pair), "estimate": ""})
    body = shown.content.decode()
    assert shown.status_code == 200
    assert 'id="schedule-estimate"' in body and '<td class="num">720</td>' in body
    assert not RunSchedule.objects.exists()
    key = shown.context["estimated_key"]
    changed = client.post(
        "/schedules/", {**form(pair, interval_minutes=30), "estimated": key, "save": ""}
    )
    assert changed.status_code == 200 and not RunSchedule.objects.exists()  # estimated again
    saved = client.post("/schedules/", {**form(pair), "estimated": key, "save": ""}, follow=True)
    assert saved.content.decode().count("Schedule saved.") == 1  # once: the page places it
    schedule = RunSchedule.objects.get()
    assert schedule.created_by == editor and schedule.interval_minutes == 60
    page = client.get("/schedules/").content.decode()
    assert "every 60 min" in page and "none yet" in page


def test_a_bad_cron_is_shown_on_the_form(logged_in, builder, pair):
    body = (
        logged_in(builder)
        .post("/schedules/", {**form(pair, cron="daily", interval_minutes=""), "estimate": ""})
        .content.decode()
    )
    assert "is not a valid cron expression" in body
    assert not RunSchedule.objects.exists()


def test_pause_resume_delete_and_a_refusal(logged_in, builder, publisher, pair):
    schedule = create(builder, pair)
    refused = logged_in(publisher).post(f"/schedules/{schedule.pk}/delete/", follow=True)
    assert "You may not schedule" in refused.content.decode()
    client = logged_in(builder)
    client.post(f"/schedules/{schedule.pk}/pause/")
    schedule.refresh_from_db()
    assert not schedule.active
    assert "paused" in client.get("/schedules/").content.decode()
    client.post(f"/schedules/{schedule.pk}/resume/")
    schedule.refresh_from_db()
    assert schedule.active
    client.post(f"/schedules/{schedule.pk}/delete/")
    assert not RunSchedule.objects.exists()
    assert client.post(f"/schedules/{schedule.pk}/explode/").status_code == 404


def test_the_new_schedule_form_is_offered_only_to_those_who_may_schedule(
    logged_in, builder, publisher, pair
):
    assert 'id="new-schedule"' in logged_in(builder).get("/schedules/").content.decode()
    page = logged_in(publisher).get("/schedules/").content.decode()
    assert 'id="new-schedule"' not in page and "Scheduling needs the Editor role" in page
