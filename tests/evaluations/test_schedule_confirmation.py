"""A schedule's form shows every error at once, and a month above
SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD is saved only once its cost is confirmed, on the page,
in the admin and through the API, with the confirmation in the audit entry."""

from decimal import Decimal

import pytest

from evaluations.actions.create_schedule import CreateSchedule
from evaluations.actions.update_schedule import UpdateSchedule
from evaluations.models import RunSchedule, Trial
from governance.models import AuditEntry
from sherlock.core.errors import ActionInvalid, InvalidFields
from tests.support import factories


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


@pytest.fixture
def priced(builder, pair, django_capture_on_commit_callbacks):
    """The pair's agent with a cost history: each trial cost $0.10, so a run of its two cases
    costs $0.20 and a run every 5 minutes ($0.20 x 8640) $1,728 a month."""
    agent, live, _, v1 = pair
    run = factories.start_run(builder, live, v1, django_capture_on_commit_callbacks)
    Trial.objects.filter(run=run).update(cost_usd=Decimal("0.10"))
    return pair


# --- every error at once -----------------------------------------------------------------------


def test_the_page_shows_every_error_of_the_schedule_at_once(logged_in, builder, pair):
    draft = factories.dataset_version(pair[2], frozen=False)
    response = logged_in(builder).post(
        "/schedules/",
        {
            **form(pair, cron="daily", interval_minutes="", repetitions=0),
            "dataset_version": draft.pk,
            "estimate": "",
        },
    )
    errors = response.context["form"].errors
    assert "is not a valid cron expression" in " ".join(errors["cron"])
    assert "repetitions" in errors
    assert "dataset_version" in errors  # a draft is not offered (frozen versions only)
    body = response.content.decode()
    assert body.count('class="status error" role="alert"') >= 3
    assert not RunSchedule.objects.exists()


def test_the_browser_leaves_the_errors_to_the_page(logged_in, builder, pair):
    """An empty form's Estimate reaches the server, which names every error at once; the
    browser's own checks would refuse it one field at a time."""
    body = logged_in(builder).get("/schedules/").content.decode()
    assert 'action="/schedules/" novalidate>' in body


def test_both_timings_and_a_bad_interval_are_told_together(logged_in, builder, pair):
    response = logged_in(builder).post(
        "/schedules/", {**form(pair, cron="0 6 * * *", interval_minutes=50000), "estimate": ""}
    )
    errors = response.context["form"].errors
    assert errors["cron"] == ["give either a cron expression or an interval in minutes"]
    assert errors["interval_minutes"] == ["interval_minutes must be between 1 and 44640"]


def test_the_action_refuses_with_every_error(builder, pair):
    agent, _, dataset, _ = pair
    with pytest.raises(InvalidFields) as refused:
        CreateSchedule(
            acting_user=builder, agent=agent, dataset=dataset, cron="nope", repetitions=0
        ).execute()
    assert [e.field for e in refused.value.errors] == ["cron", "repetitions"]


def test_the_api_answers_every_error(builder, pair):
    agent, _, dataset, _ = pair
    response = factories.api(builder).post(
        "/api/v1/schedules/",
        {"agent": agent.slug, "dataset": dataset.slug, "cron": "nope", "repetitions": 0},
        format="json",
    )
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "cron"
    assert [e["field"] for e in body["errors"]] == ["cron", "repetitions"]


# --- a costly month is confirmed ---------------------------------------------------------------


def test_a_month_above_the_limit_asks_for_a_confirmation_on_the_page(logged_in, builder, priced):
    client = logged_in(builder)
    shown = client.post("/schedules/", {**form(priced, interval_minutes=5), "estimate": ""})
    body = shown.content.decode()
    assert 'id="confirm-cost"' in body
    assert "This schedule costs $1,728.00 a month" in body  # grouped thousands
    assert ">8,640<" in body  # runs in 30 days, grouped too
    assert "SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD" in body and "$100.00" in body
    key = shown.context["estimated_key"]
    refused = client.post(
        "/schedules/", {**form(priced, interval_minutes=5), "estimated": key, "save": ""}
    )
    assert "confirm the cost to save it" in " ".join(refused.context["form"].errors["confirm_cost"])
    assert not RunSchedule.objects.exists()
    saved = client.post(
        "/schedules/",
        {**form(priced, interval_minutes=5), "estimated": key, "save": "", "confirm_cost": "on"},
    )
    assert saved.status_code == 302
    entry = AuditEntry.objects.get(action="evaluations.schedule.create")
    assert entry.after["monthly_usd"] == "1728.0000"
    assert entry.after["confirmed_over_usd"] == "100"
    agent, _, dataset, _ = priced
    # Names, never ids: the audit page shows this to people.
    assert (entry.after["agent"], entry.after["dataset"]) == (agent.slug, dataset.slug)
    assert not any(name.endswith("_id") for name in entry.after)


def test_a_schedule_within_the_limit_needs_no_confirmation(logged_in, builder, priced):
    client = logged_in(builder)
    daily = form(priced, interval_minutes=1440)  # $0.20 x 30 runs = $6 a month
    shown = client.post("/schedules/", {**daily, "estimate": ""})
    assert 'id="confirm-cost"' not in shown.content.decode()
    key = shown.context["estimated_key"]
    assert client.post("/schedules/", {**daily, "estimated": key, "save": ""}).status_code == 302
    assert "monthly_usd" not in AuditEntry.objects.get(action="evaluations.schedule.create").after


def test_the_limit_is_a_setting(settings, builder, priced):
    agent, _, dataset, _ = priced
    settings.SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD = 5000
    schedule = CreateSchedule(
        acting_user=builder, agent=agent, dataset=dataset, interval_minutes=5
    ).execute()
    assert schedule.pk
    assert "monthly_usd" not in AuditEntry.objects.get(action="evaluations.schedule.create").after


def test_the_api_refuses_an_unconfirmed_costly_schedule_then_accepts_it(builder, priced):
    agent, _, dataset, _ = priced
    body = {"agent": agent.slug, "dataset": dataset.slug, "interval_minutes": 5}
    client = factories.api(builder)
    refused = client.post("/api/v1/schedules/", body, format="json")
    assert refused.status_code == 400
    assert refused.json()["code"] == "cost_confirmation_required"
    assert refused.json()["field"] == "confirm_cost"
    accepted = client.post("/api/v1/schedules/", {**body, "confirm_cost": True}, format="json")
    assert accepted.status_code == 201 and "confirm_cost" not in accepted.json()


def test_making_a_schedule_more_frequent_past_the_limit_is_confirmed(builder, priced):
    agent, _, dataset, _ = priced
    schedule = CreateSchedule(
        acting_user=builder, agent=agent, dataset=dataset, interval_minutes=1440
    ).execute()
    with pytest.raises(ActionInvalid) as refused:
        UpdateSchedule(acting_user=builder, schedule=schedule, interval_minutes=5).execute()
    assert refused.value.field == "confirm_cost"
    assert RunSchedule.objects.get(pk=schedule.pk).interval_minutes == 1440
    UpdateSchedule(
        acting_user=builder, schedule=schedule, interval_minutes=5, confirm_cost=True
    ).execute()
    entry = AuditEntry.objects.filter(action="evaluations.schedule.update").get()
    assert entry.after["confirmed_over_usd"] == "100"


def test_pausing_a_costly_schedule_needs_no_confirmation(builder, priced):
    agent, _, dataset, _ = priced
    schedule = CreateSchedule(
        acting_user=builder, agent=agent, dataset=dataset, interval_minutes=5, confirm_cost=True
    ).execute()
    UpdateSchedule(acting_user=builder, schedule=schedule, active=False).execute()
    assert not RunSchedule.objects.get(pk=schedule.pk).active


def test_the_admin_asks_for_the_confirmation_on_its_field(logged_in, builder, priced):
    agent, _, dataset, _ = priced
    data = {"agent": agent.pk, "dataset": dataset.pk, "repetitions": 1, "interval_minutes": 5}
    data["active"] = "on"
    client = logged_in(builder)
    refused = client.post("/admin/evaluations/runschedule/add/", data)
    form = refused.context["adminform"].form
    assert "confirm the cost to save it" in " ".join(form.errors["confirm_cost"])
    assert not RunSchedule.objects.exists()
    saved = client.post("/admin/evaluations/runschedule/add/", {**data, "confirm_cost": "on"})
    assert saved.status_code == 302 and RunSchedule.objects.count() == 1
