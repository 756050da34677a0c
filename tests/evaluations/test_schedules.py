"""Schedules: the verbs and who may use them, the django-q2 row each owns,
the monthly estimate, and the task that fires a run (pinned vs latest versions, failures)."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule

from evaluations.actions.delete_schedule import DeleteSchedule
from evaluations.actions.fire_schedule import estimate_schedule, fire, runs_per_month
from evaluations.actions.pause_schedule import PauseSchedule, ResumeSchedule
from evaluations.actions.update_schedule import UpdateSchedule
from evaluations.choices import RunPurpose
from evaluations.models import Run, RunSchedule
from evaluations.signals import schedule_failed
from governance.models import AuditEntry
from sherlock.core.errors import ActionDenied, ActionInvalid
from tests.support import factories
from tests.support.governance import grant_on
from tests.support.schedules import OWNED, SHAPE, create


@pytest.mark.parametrize("who", ["editor", "builder", "admin_user"])
def test_editors_and_builders_may_create_update_pause_and_delete(request, who, pair):
    user = request.getfixturevalue(who)
    schedule = create(user, pair)
    q = Schedule.objects.get(pk=schedule.q_schedule_id)
    assert (q.func, q.args, q.schedule_type, q.minutes, q.repeats) == (
        "evaluations.tasks.run_schedule",
        repr(schedule.pk),
        Schedule.MINUTES,
        60,
        -1,
    )
    assert q.next_run > timezone.now()
    UpdateSchedule(
        acting_user=user, schedule=schedule, cron="0 6 * * 1-5", interval_minutes=None
    ).execute()
    q.refresh_from_db()
    assert (q.schedule_type, q.cron, q.minutes) == (Schedule.CRON, "0 6 * * 1-5", None)
    PauseSchedule(acting_user=user, schedule=schedule).execute()
    q.refresh_from_db()
    assert q.repeats == 0 and schedule.next_run is None
    DeleteSchedule(acting_user=user, schedule=schedule).execute()
    assert not RunSchedule.objects.exists() and not Schedule.objects.filter(pk=q.pk).exists()
    codes = list(AuditEntry.objects.order_by("pk").values_list("action", flat=True))
    assert codes[-4:] == [
        "evaluations.schedule.create",
        "evaluations.schedule.update",
        "evaluations.schedule.pause",
        "evaluations.schedule.delete",
    ]


def test_a_schedule_deleted_with_its_dataset_takes_its_django_q_row_along(editor, pair):
    schedule = create(editor, pair)
    q_id = schedule.q_schedule_id
    pair[2].delete()  # a dataset without runs: its schedules go by cascade
    assert not RunSchedule.objects.exists() and not Schedule.objects.filter(pk=q_id).exists()


def test_an_editor_of_the_dataset_only_may_schedule_it(pair):
    scoped = grant_on(factories.user("scoped-editor"), "Editor", pair[2])
    assert create(scoped, pair).created_by == scoped
    other = factories.dataset_version(factories.dataset("other"), cases=[("x", "q", {})])
    with pytest.raises(ActionDenied):
        create(scoped, pair, dataset=other.dataset)


@pytest.mark.parametrize("who", ["publisher", "outsider"])
def test_publishers_and_outsiders_may_not(request, who, pair, editor):
    user = request.getfixturevalue(who)
    with pytest.raises(ActionDenied):
        create(user, pair)
    schedule = create(editor, pair)
    for verb in (UpdateSchedule, PauseSchedule, DeleteSchedule):
        with pytest.raises(ActionDenied):
            verb(acting_user=user, schedule=schedule).execute()
    assert RunSchedule.objects.count() == 1 and OWNED().count() == 1


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"interval_minutes": None}, "cron"),
        ({"cron": "0 6 * * *"}, "cron"),
        ({"cron": "not a cron", "interval_minutes": None}, "cron"),
        ({"interval_minutes": 0}, "interval_minutes"),
        ({"repetitions": 0}, "repetitions"),
    ],
)
def test_bad_timing_is_refused_and_nothing_is_written(builder, pair, fields, field):
    with pytest.raises(ActionInvalid) as refused:
        create(builder, pair, **fields)
    assert refused.value.field == field
    assert not RunSchedule.objects.exists() and not OWNED().exists()


def test_a_pinned_draft_or_foreign_version_is_refused(builder, pair):
    draft = factories.dataset_version(pair[2], cases=[("a", "q", {})], frozen=False)
    with pytest.raises(ActionInvalid, match="frozen"):
        create(builder, pair, dataset_version=draft)
    foreign = factories.agent_version(factories.agent("other-bot"))
    with pytest.raises(ActionInvalid, match="not of this agent"):
        create(builder, pair, agent_version=foreign)


def test_runs_per_month_counts_cron_firings_and_intervals():
    start = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    assert runs_per_month(interval_minutes=60) == 720
    assert runs_per_month("0 6 * * *", start=start) == 30
    assert runs_per_month("0 */6 * * *", start=start) == 120
    assert runs_per_month("* * * * *", start=start) == 43200  # extrapolated past 2000 firings
    assert runs_per_month("*/5 * * * *", start=start) == 8640


def test_the_estimate_is_one_run_times_the_runs_of_a_month(pair):
    _, live, _, v1 = pair
    daily = estimate_schedule(live, v1, 2, cron="0 6 * * *")
    assert daily["per_run"]["trials"] == 4  # 2 cases x 2 repetitions
    assert daily["runs_per_month"] in (30, 31)
    assert daily["calls_per_month"] == daily["per_run"]["calls"] * daily["runs_per_month"]
    if daily["per_run"]["usd"] is None:
        assert daily["usd_per_month"] is None  # a missing price is never $0 a month


def test_firing_starts_a_scheduled_run_of_the_latest_frozen_and_live_versions(
    editor, pair, django_capture_on_commit_callbacks
):
    agent, live, dataset, v1 = pair
    schedule = create(editor, pair)
    v2 = factories.dataset_version(dataset, cases=[("a", "q", {})], checks=[SHAPE])
    factories.dataset_version(dataset, cases=[("a", "q", {})], frozen=False)  # a draft: skipped
    with django_capture_on_commit_callbacks(execute=True):
        run = fire(schedule.pk)
    run.refresh_from_db()
    assert (run.agent_version, run.dataset_version) == (live, v2)
    assert (run.purpose, run.schedule, run.requested_by) == (RunPurpose.SCHEDULED, schedule, editor)
    assert run.status == "completed"
    schedule.refresh_from_db()
    assert schedule.last_run == run and schedule.last_error == ""


def test_firing_a_pinned_schedule_uses_the_pinned_versions(builder, pair):
    agent, live, dataset, v1 = pair
    pinned_agent = factories.agent_version(agent)
    factories.dataset_version(dataset, cases=[("a", "q", {})])
    schedule = create(builder, pair, agent_version=pinned_agent, dataset_version=v1)
    run = fire(schedule.pk)
    assert (run.agent_version, run.dataset_version) == (pinned_agent, v1)


@pytest.fixture
def failures():
    received = []

    def listener(sender, schedule_id, error, **kwargs):
        received.append((schedule_id, error))

    schedule_failed.connect(listener)
    yield received
    schedule_failed.disconnect(listener)


def test_a_failure_is_recorded_and_announced(
    builder, pair, failures, django_capture_on_commit_callbacks
):
    agent = pair[0]
    schedule = create(builder, pair)
    agent.live_version = None
    agent.save(update_fields=["live_version"])
    with django_capture_on_commit_callbacks(execute=True):
        assert fire(schedule.pk) is None
    schedule.refresh_from_db()
    assert "no live version" in schedule.last_error and schedule.last_fired_at
    assert failures == [(schedule.pk, schedule.last_error)]
    assert not Run.objects.exists()


def test_a_creator_who_lost_the_right_no_longer_starts_runs(pair, failures, builder):
    scoped = grant_on(factories.user("scoped-builder"), "Builder", pair[0])
    schedule = create(scoped, pair)
    from guardian.shortcuts import remove_perm

    remove_perm("build_agent", scoped, pair[0])
    assert fire(schedule.pk) is None
    schedule.refresh_from_db()
    assert "may no longer" in schedule.last_error
    assert not Run.objects.exists()


def test_a_paused_schedule_fired_late_does_nothing(builder, pair):
    schedule = create(builder, pair)
    PauseSchedule(acting_user=builder, schedule=schedule).execute()
    assert fire(schedule.pk) is None
    assert not Run.objects.exists()
    ResumeSchedule(acting_user=builder, schedule=schedule).execute()
    schedule.q_schedule.refresh_from_db()
    assert schedule.q_schedule.repeats == -1
    assert schedule.q_schedule.next_run > timezone.now() - timedelta(seconds=5)
