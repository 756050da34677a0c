"""What the schedule verbs share: who may schedule, field validation, and keeping the owned
django-q2 `Schedule` row in step with a `RunSchedule` (called inside the verb's transaction)."""

from datetime import timedelta
from decimal import Decimal
from typing import cast

from croniter import croniter
from django.conf import settings
from django.utils import timezone
from django_q.models import Schedule

from agents.choices import Adapter
from agents.models import Agent
from evaluations.costs.texts import format_usd
from evaluations.models import Dataset, RunSchedule
from sherlock.core.errors import ActionDenied, ActionInvalid, raise_invalid
from sherlock.core.limits import check_text, excerpt
from sherlock.core.permissions import user_can

FUNC = "evaluations.tasks.run_schedule"
# What a schedule runs and when, as its forms and serializers name the fields; and with whether
# it is active, everything a person edits.
PLAN_FIELDS = (
    "agent",
    "agent_version",
    "dataset",
    "dataset_version",
    "repetitions",
    "cron",
    "interval_minutes",
)
SCHEDULE_FIELDS = (*PLAN_FIELDS, "active")
# What a schedule's audit entry records, in names (never `agent_id: 3`).
FIELDS = ("repetitions", "cron", "interval_minutes", "active")


def may_schedule(user, agent, dataset):
    """An Editor of the dataset or a Builder of the agent (or an Admin) may schedule it."""
    return user_can(user, "build", agent) or user_can(user, "edit", dataset)


def may_schedule_any(user):
    """Whether `user` may schedule anything at all: the pages offer the form only then."""
    return (
        Agent.objects.for_user(user, "build").exists()
        or Dataset.objects.for_user(user, "edit").exists()
    )


def check_may_schedule(user, agent, dataset):
    if not may_schedule(user, agent, dataset):
        raise ActionDenied(
            "You may not schedule this run (Editor of the dataset or Builder of the agent needed)."
        )


def schedule_errors(schedule):
    """Every reason `schedule` could never fire or would fire a run StartRun refuses, each an
    ActionInvalid naming its field, in the form's order: a form shows them all at once, not one
    per submit."""
    errors = []
    cron, minutes = (schedule.cron or "").strip(), schedule.interval_minutes
    if bool(cron) == (minutes is not None):
        errors.append(
            ActionInvalid("give either a cron expression or an interval in minutes", field="cron")
        )
    # The column's own bound, checked here: PostgreSQL answers a longer value with a DataError.
    max_length = cast(int, RunSchedule._meta.get_field("cron").max_length)
    if len(cron) > max_length:
        errors.append(_caught(check_text, "cron", cron, max_length))
    elif cron and not croniter.is_valid(cron):
        errors.append(
            ActionInvalid(f"{excerpt(cron)} is not a valid cron expression", field="cron")
        )
    if minutes is not None and not 1 <= minutes <= 60 * 24 * 31:
        errors.append(
            ActionInvalid("interval_minutes must be between 1 and 44640", field="interval_minutes")
        )
    if not isinstance(schedule.repetitions, int) or not 1 <= schedule.repetitions <= 100:
        errors.append(ActionInvalid("repetitions must be between 1 and 100", field="repetitions"))
    if schedule.agent_version_id and schedule.agent_version.agent_id != schedule.agent_id:
        errors.append(
            ActionInvalid("the pinned version is not of this agent", field="agent_version")
        )
    elif schedule.active:
        # Only an active schedule would start runs: pausing one is always allowed.
        errors.append(_caught(check_runs_here, schedule))
    if schedule.dataset_version_id and schedule.dataset_version.dataset_id != schedule.dataset_id:
        errors.append(
            ActionInvalid("the pinned version is not of this dataset", field="dataset_version")
        )
    elif schedule.dataset_version_id and not schedule.dataset_version.is_frozen:
        errors.append(
            ActionInvalid("scheduled runs pin frozen dataset versions", field="dataset_version")
        )
    return [error for error in errors if error is not None]


def check_runs_here(schedule):
    """Refuse (code `client_version`) a schedule that would run a `client` version, pinned (on
    `agent_version`) or as the agent's live version (on `agent`)."""
    client = _client_version(schedule)
    if client is not None:
        pinned = bool(schedule.agent_version_id)
        raise ActionInvalid(
            client_version_refusal(client, pinned=pinned),
            code="client_version",
            field="agent_version" if pinned else "agent",
        )


def _client_version(schedule):
    """The version the schedule would run now (pinned, else the agent's live one) when it is a
    `client` version, else None."""
    if schedule.agent_version_id:
        version = schedule.agent_version
    elif schedule.agent_id:
        version = schedule.agent.live_version
    else:
        return None
    return version if version is not None and version.adapter == Adapter.CLIENT else None


def client_version_refusal(version, *, pinned=True):
    """Why a schedule cannot run a `client` version: its code runs in the team's CI, and the
    run a schedule started would wait for uploads no one sends (docs/schedules.md)."""
    which = f"{version}" if pinned else f"the live version {version}"
    return (
        f"{which} runs on the client (the team's own code, docs/client.md): a "
        "scheduled run would wait for uploads that nobody sends. Schedule `sherlock run` in "
        "the team's CI instead, or pin a version Sherlock runs itself."
    )


def _caught(check, *args):
    try:
        check(*args)
    except ActionInvalid as exc:
        return exc
    return None


def validate(schedule):
    """Refuse a schedule that could never fire or would fire a run StartRun refuses, with every
    reason at once (`schedule_errors`, `raise_invalid`)."""
    raise_invalid(schedule_errors(schedule))
    schedule.cron = (schedule.cron or "").strip()


def monthly_cost(schedule):
    """The schedule's month of runs in USD (a Decimal; what is priced when a price is missing)
    and its words, with the versions it resolves to now; (None, "") when it resolves to none."""
    from evaluations.actions.fire_schedule import estimate_schedule  # the estimate reads the costs

    agent_version, dataset_version = schedule.resolve()
    if agent_version is None or dataset_version is None:
        return None, ""
    estimate = estimate_schedule(
        agent_version,
        dataset_version,
        schedule.repetitions,
        schedule.cron,
        schedule.interval_minutes,
    )
    priced = estimate["usd_per_month"]
    if priced is None:  # a price is missing: the priced part is what is known to be spent
        priced = Decimal(estimate["per_run"].get("usd_known") or 0) * estimate["runs_per_month"]
    # The estimate's figures are floats: four decimals, as the pages show money.
    return Decimal(priced).quantize(Decimal("0.0001")), estimate["per_month_text"]


def confirm_limit():
    return Decimal(settings.SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD)


def check_cost_confirmed(schedule, confirmed):
    """Refuse (field `confirm_cost`) an active schedule whose month passes
    SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD unless the person confirmed the cost; returns what
    the audit entry records then ({"monthly_usd", "confirmed_over_usd"}), else {}."""
    if not schedule.active:
        return {}
    usd, text = monthly_cost(schedule)
    limit = confirm_limit()
    if usd is None or usd <= limit:
        return {}
    if not confirmed:
        raise ActionInvalid(
            f"this schedule is estimated at {text} a month, above the "
            f"{format_usd(limit)} that needs a confirmation "
            "(SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD): confirm the cost to save it",
            code="cost_confirmation_required",
            field="confirm_cost",
        )
    return {"monthly_usd": str(usd), "confirmed_over_usd": str(limit)}


def first_run(schedule, now=None):
    now = now or timezone.now()
    if schedule.cron:
        return croniter(schedule.cron, now).get_next(type(now))
    return now + timedelta(minutes=schedule.interval_minutes)


def sync_q_schedule(schedule):
    """Create or update the django-q2 row that fires `schedule` (paused: `repeats=0`, which
    django-q2 never fires); the caller's transaction covers both rows."""
    q = schedule.q_schedule or Schedule(func=FUNC, name=f"sherlock-run-schedule-{schedule.pk}")
    q.args = repr(schedule.pk)  # django-q2 evaluates `args` as a Python literal
    if schedule.cron:
        q.schedule_type, q.cron, q.minutes = Schedule.CRON, schedule.cron, None
    else:
        q.schedule_type, q.cron, q.minutes = Schedule.MINUTES, None, schedule.interval_minutes
    q.repeats = -1 if schedule.active else 0
    if schedule.active and (q.pk is None or q.next_run is None or q.next_run < timezone.now()):
        q.next_run = first_run(schedule)
    q.save()
    if schedule.q_schedule_id != q.pk:
        schedule.q_schedule = q
        schedule.save(update_fields=["q_schedule"])
    return q


def snapshot(schedule):
    """The schedule as its audit entry records it: the agent and dataset by slug, pinned
    versions by number (None: the live version, the latest frozen one), then `FIELDS`."""
    return {
        "agent": schedule.agent.slug,
        "agent_version": schedule.agent_version.number if schedule.agent_version_id else None,
        "dataset": schedule.dataset.slug,
        "dataset_version": (
            schedule.dataset_version.number if schedule.dataset_version_id else None
        ),
        **{name: getattr(schedule, name) for name in FIELDS},
    }
