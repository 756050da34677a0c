"""Firing a `RunSchedule` and estimating what it costs (the task and the forms call these).

`fire` resolves the versions (pinned, else the agent's live version and the dataset's latest
frozen one), re-checks that the creator may still schedule this pair, and starts the run with
`StartRun` (purpose `scheduled`, requested by the creator). `StartRun` runs as the system
(`acting_user=None`) because an Editor of the dataset may schedule without being a Builder of
the agent; the schedule verbs checked the creator, and `fire` checks again. A failure is kept on
the schedule (`last_error`) and announced by `evaluations.signals.schedule_failed`.
"""

from datetime import timedelta
from decimal import Decimal

from croniter import croniter
from django.db import transaction
from django.utils import timezone

from agents.choices import Adapter
from evaluations.actions.schedule_fields import client_version_refusal, may_schedule
from evaluations.actions.start_run import StartRun
from evaluations.choices import RunPurpose
from evaluations.costs.estimate import estimate_start
from evaluations.costs.texts import estimate_cost, estimate_missing_calls, format_usd
from evaluations.models import Run, RunSchedule
from evaluations.signals import schedule_failed
from sherlock.core.errors import ActionError

DAYS = 30
EXACT_UP_TO = 2000


def drop_q_schedule(sender, instance, **kwargs):
    """`post_delete` of a RunSchedule, however it went (DeleteSchedule, or a cascade from its
    dataset or agent): its django-q2 row goes too, or it would tick forever on nothing."""
    if instance.q_schedule_id:
        # Imported here: django_q's models are read once the app registry is ready (this module
        # loads with it).
        from django_q.models import Schedule

        Schedule.objects.filter(pk=instance.q_schedule_id).delete()


def runs_per_month(cron="", interval_minutes=None, start=None):
    """How many times a schedule fires in the next 30 days: croniter counts the cron firings
    (past `EXACT_UP_TO` of them, the rate so far is extrapolated to the 30 days, so a schedule
    every minute costs no 43200 iterations); an interval is 43200 / minutes."""
    if interval_minutes:
        return (DAYS * 24 * 60) // interval_minutes
    start = start or timezone.now()
    end = start + timedelta(days=DAYS)
    times, count = croniter(cron, start), 0
    while (at := times.get_next(type(start))) <= end:
        count += 1
        if count == EXACT_UP_TO:
            return round(count * (end - start) / (at - start))
    return count


def estimate_schedule(agent_version, dataset_version, repetitions, cron="", interval_minutes=None):
    """`estimate_start` of one run, and the month's runs and USD (None when a price is
    missing: an unknown cost is never $0), with both in words as the pages show them."""

    per_run = estimate_start(agent_version, dataset_version, repetitions)
    runs = runs_per_month(cron, interval_minutes)
    usd = per_run["usd"]
    missing = estimate_missing_calls(per_run)
    known = Decimal(per_run.get("usd_known") or 0) * runs
    return {
        "per_run": per_run,
        "runs_per_month": runs,
        "calls_per_month": per_run["calls"] * runs,
        "usd_per_month": None if usd is None else str(Decimal(usd) * runs),
        "per_run_text": estimate_cost(per_run),
        "per_month_text": format_usd(Decimal(usd) * runs)
        if usd is not None
        else format_usd(known or None, missing * runs),
    }


def fire(schedule_id):
    """Start the schedule's run now; returns the run, or None when it failed (recorded)."""

    schedule = (
        RunSchedule.objects.select_related("agent", "dataset", "created_by")
        .filter(pk=schedule_id, active=True)
        .first()
    )
    if schedule is None:
        return None  # deleted or paused between the tick and the task
    agent_version, dataset_version = schedule.resolve()
    error = ""
    run = None
    if agent_version is None:
        error = f"agent {schedule.agent} has no live version"
    elif dataset_version is None:
        error = f"dataset {schedule.dataset} has no frozen version"
    elif agent_version.adapter == Adapter.CLIENT:
        # The live version became a client version after the schedule was saved: a run would
        # wait for uploads that nobody sends (docs/schedules.md).
        error = client_version_refusal(agent_version, pinned=bool(schedule.agent_version_id))
    elif not may_schedule(schedule.created_by, schedule.agent, schedule.dataset):
        error = "the schedule's creator may no longer schedule this agent and dataset"
    else:
        try:
            with transaction.atomic():
                run = StartRun(
                    acting_user=None,
                    agent_version=agent_version,
                    dataset_version=dataset_version,
                    repetitions=schedule.repetitions,
                    purpose=RunPurpose.SCHEDULED,
                ).execute()
                Run.objects.filter(pk=run.pk).update(
                    schedule=schedule, requested_by=schedule.created_by
                )
        except ActionError as exc:
            error = str(exc)
    RunSchedule.objects.filter(pk=schedule.pk).update(
        last_fired_at=timezone.now(), last_error=error, **({"last_run": run} if run else {})
    )
    if error:
        transaction.on_commit(
            lambda: schedule_failed.send(sender=RunSchedule, schedule_id=schedule.pk, error=error)
        )
    return run
