"""The schedules admin goes through the schedule verbs: a Builder adds one (and its django-q2
row), a bad cron is a message on the form with nothing written, a Publisher cannot add, and the
pause action pauses."""

from evaluations.models import RunSchedule
from governance.models import AuditEntry
from tests.support import factories
from tests.support.schedules import OWNED, create

ADD = "/admin/evaluations/runschedule/add/"


def form(pair, **fields):
    agent, _, dataset, _ = pair
    return {
        "agent": agent.pk,
        "agent_version": "",
        "dataset": dataset.pk,
        "dataset_version": "",
        "repetitions": 1,
        "cron": "0 6 * * *",
        "interval_minutes": "",
        "active": "on",
        **fields,
    }


def test_a_builder_adds_a_schedule_through_the_verb(logged_in, builder, pair):
    client = logged_in(builder)
    response = client.post(ADD, form(pair))
    assert response.status_code == 302, response.content.decode()[:3000]
    schedule = RunSchedule.objects.get()
    assert schedule.created_by == builder and OWNED().get().cron == "0 6 * * *"
    assert AuditEntry.objects.filter(action="evaluations.schedule.create").count() == 1
    page = client.get(f"/admin/evaluations/runschedule/{schedule.pk}/change/").content.decode()
    assert "per 30 days" in page


def test_a_bad_cron_is_a_message_on_the_form(logged_in, builder, pair):
    response = logged_in(builder).post(ADD, form(pair, cron="at dawn"))
    assert response.status_code == 200
    assert "is not a valid cron expression" in response.content.decode()
    assert not RunSchedule.objects.exists() and not OWNED().exists()


def test_a_publisher_cannot_add(logged_in, publisher, pair):
    assert logged_in(publisher).get(ADD).status_code == 403
    assert logged_in(publisher).post(ADD, form(pair)).status_code == 403
    assert not RunSchedule.objects.exists()


def test_the_pause_action(logged_in, editor, pair):
    schedule = create(editor, pair)
    logged_in(editor).post(
        "/admin/evaluations/runschedule/",
        {"action": "pause_selected", "_selected_action": [schedule.pk]},
    )
    schedule.refresh_from_db()
    assert not schedule.active and OWNED().get().repeats == 0
    refused = logged_in(factories.user("p2", role="Publisher"))
    refused.post(
        "/admin/evaluations/runschedule/",
        {"action": "resume_selected", "_selected_action": [schedule.pk]},
    )
    schedule.refresh_from_db()
    assert not schedule.active


def test_a_delete_the_verb_refuses_is_a_message_not_a_500(
    logged_in, editor, publisher, pair, monkeypatch
):
    from evaluations.admin import RunScheduleAdmin

    schedule = create(editor, pair)
    url = f"/admin/evaluations/runschedule/{schedule.pk}/delete/"
    # The admin's own check passed (it can go stale between the page and the verb): the verb
    # still refuses a Publisher, who may not schedule.
    monkeypatch.setattr(RunScheduleAdmin, "has_delete_permission", lambda *args: True)
    response = logged_in(publisher).post(url, {"post": "yes"}, follow=True)
    assert response.redirect_chain[-1][0].endswith(f"/runschedule/{schedule.pk}/change/")
    assert "may not" in response.content.decode()
    assert RunSchedule.objects.filter(pk=schedule.pk).exists() and OWNED().exists()
    assert AuditEntry.objects.filter(action="evaluations.schedule.refused", actor=publisher)
