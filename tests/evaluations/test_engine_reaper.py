"""The reaper hands back what dead workers left behind, and nothing else: an expired lease is
run again once, a live one is left alone, a silent run's pending trials are enqueued again, a
trial that keeps killing its worker is given up, and a run whose last worker died before
finishing it is finished. It runs on a schedule that a migration creates once."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluations.actions.start_run import StartRun
from evaluations.engine import MAX_ATTEMPTS, reap
from evaluations.models import CheckResult, Run, Trial
from evaluations.signals import run_finished
from tests.support import factories

SHAPE = {"label": "Shape", "kind": "output_type", "params": {"type": "text"}, "threshold": 1.0}


@pytest.fixture
def run(builder, django_capture_on_commit_callbacks):
    """A run of three trials whose shard never ran (as if its worker died holding the task)."""
    version = factories.agent_version()
    dataset_version = factories.dataset_version(
        cases=[(f"c{i}", f"q{i}", {}) for i in range(3)], checks=[SHAPE]
    )
    with django_capture_on_commit_callbacks(execute=False):
        return StartRun(
            acting_user=builder, agent_version=version, dataset_version=dataset_version
        ).execute()


def held_by_a_dead_worker(trial, expired=True):
    """The trial as a worker that died mid-call leaves it: running, leased, one attempt."""
    lease = timezone.now() + timedelta(seconds=-1 if expired else 600)
    Trial.objects.filter(pk=trial.pk).update(
        status="running", attempts=1, lease_expires_at=lease, worker="gone:1"
    )
    Run.objects.filter(pk=trial.run_id).update(status="running")


def reap_now(capture, **kwargs):
    with capture(execute=True):  # sync mode: the re-enqueued shard runs right here
        return reap(**kwargs)


def test_an_expired_lease_is_handed_back_and_its_trial_runs_again_once(
    run, django_capture_on_commit_callbacks
):
    first, *others = run.trials.order_by("pk")
    held_by_a_dead_worker(first)
    Run.objects.filter(pk=run.pk).update(enqueued_at=timezone.now())  # the others' shard lives
    report = reap_now(django_capture_on_commit_callbacks)
    assert report["handed_back"] == 1 and report["runs_requeued"] == 0
    first.refresh_from_db()
    assert (first.status, first.attempts) == ("completed", 2)
    assert CheckResult.objects.filter(trial=first).count() == 1
    # Its shard helped with the run's other pending trials: each ran once, the run finished.
    others = Trial.objects.filter(pk__in=[t.pk for t in others])
    assert set(others.values_list("status", "attempts")) == {("completed", 1)}
    assert Run.objects.get(pk=run.pk).status == "completed"
    assert reap_now(django_capture_on_commit_callbacks)["handed_back"] == 0


def test_a_live_lease_is_left_alone(run, django_capture_on_commit_callbacks):
    first = run.trials.order_by("pk").first()
    held_by_a_dead_worker(first, expired=False)
    Run.objects.filter(pk=run.pk).update(enqueued_at=timezone.now())
    assert reap_now(django_capture_on_commit_callbacks)["handed_back"] == 0
    first.refresh_from_db()
    assert (first.status, first.attempts) == ("running", 1)


def test_the_pending_trials_of_a_silent_run_are_enqueued_again(
    run, settings, django_capture_on_commit_callbacks
):
    silent_since = timezone.now() - timedelta(seconds=settings.SHERLOCK_TRIAL_LEASE_SECONDS + 1)
    Run.objects.filter(pk=run.pk).update(enqueued_at=silent_since)
    assert reap_now(django_capture_on_commit_callbacks)["runs_requeued"] == 1
    run.refresh_from_db()
    assert run.status == "completed" and run.trials_done == 3
    assert set(run.trials.values_list("attempts", flat=True)) == {1}


def test_a_run_enqueued_within_the_lease_period_is_not_enqueued_again(
    run, django_capture_on_commit_callbacks
):
    Run.objects.filter(pk=run.pk).update(enqueued_at=timezone.now())
    assert reap_now(django_capture_on_commit_callbacks)["runs_requeued"] == 0
    assert set(run.trials.values_list("status", flat=True)) == {"pending"}


def test_a_trial_that_stops_its_worker_every_time_is_given_up(
    run, django_capture_on_commit_callbacks
):
    first = run.trials.order_by("pk").first()
    held_by_a_dead_worker(first)
    Trial.objects.filter(pk=first.pk).update(attempts=MAX_ATTEMPTS)
    Run.objects.filter(pk=run.pk).update(enqueued_at=timezone.now())
    assert reap_now(django_capture_on_commit_callbacks)["given_up"] == 1
    first.refresh_from_db()
    assert first.status == "error" and "given up after 3 attempts" in first.error
    run.refresh_from_db()
    assert (run.trials_done, run.trials_error) == (1, 1)


def test_an_expired_trial_of_a_cancelled_run_is_cancelled_and_the_run_finishes_once(
    run, django_capture_on_commit_callbacks
):
    received = []

    def listener(sender, run_id, status, **kwargs):
        received.append(status)

    run_finished.connect(listener)
    try:
        for trial in run.trials.all():
            held_by_a_dead_worker(trial)
        Run.objects.filter(pk=run.pk).update(status="cancelled")
        report = reap_now(django_capture_on_commit_callbacks)
        reap_now(django_capture_on_commit_callbacks)
    finally:
        run_finished.disconnect(listener)
    assert report["cancelled"] == 3 and report["finished"] == 1
    run.refresh_from_db()
    assert run.status == "cancelled" and run.finalized_at is not None
    assert received == ["cancelled"]


def test_a_run_whose_last_worker_died_before_finishing_it_is_finished(
    run, django_capture_on_commit_callbacks
):
    now = timezone.now()
    run.trials.update(status="completed", finished_at=now, attempts=1)
    Run.objects.filter(pk=run.pk).update(status="running", trials_done=3)
    assert reap_now(django_capture_on_commit_callbacks)["finished"] == 1
    run.refresh_from_db()
    assert run.status == "completed" and run.summary["cases"] == 3


def test_the_reaper_is_scheduled_once_by_a_migration(db):
    from importlib import import_module

    from django.apps import apps
    from django_q.models import Schedule

    migration = import_module("evaluations.migrations.0004_reaper_schedule")
    Schedule.objects.filter(name=migration.NAME).delete()
    migration.schedule_reaper(apps, None)
    migration.schedule_reaper(apps, None)  # idempotent
    schedule = Schedule.objects.get(name=migration.NAME)
    assert schedule.func == "evaluations.tasks.reap_expired_leases"
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == ("I", 1, -1)
