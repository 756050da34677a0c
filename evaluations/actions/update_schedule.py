"""UpdateSchedule: change a schedule's versions, repetitions or timing, and its django-q2 row."""

from evaluations.actions.schedule_fields import (
    check_cost_confirmed,
    check_may_schedule,
    snapshot,
    sync_q_schedule,
    validate,
)
from sherlock.core.actions import Action
from sherlock.core.errors import ActionInvalid

EDITABLE = {
    "dataset_version",
    "agent_version",
    "repetitions",
    "cron",
    "interval_minutes",
    "active",
}


class UpdateSchedule(Action):
    """Who may create it may change it (checked on the schedule's agent and dataset, which do
    not change: a schedule of another pair is a new schedule)."""

    noun = "schedule"
    verb = "update"

    def __init__(self, *, acting_user, schedule, confirm_cost=False, **changes):
        super().__init__(acting_user=acting_user)
        self.schedule = schedule
        self.changes = changes
        self.confirm_cost = confirm_cost

    def check(self):
        check_may_schedule(self.acting_user, self.schedule.agent, self.schedule.dataset)
        unknown = set(self.changes) - EDITABLE
        if unknown:
            name = sorted(unknown)[0]
            raise ActionInvalid(f"{name} cannot be changed on a schedule", field=name)

    def perform(self):
        schedule = self.schedule
        before = snapshot(schedule)
        for name, value in self.changes.items():
            setattr(schedule, name, value)
        validate(schedule)
        # A change of what runs or how often, to a month above the limit, is confirmed
        # ; pausing or a change that costs nothing more never needs it.
        confirmed = {}
        if self.changes and schedule.active:
            confirmed = check_cost_confirmed(schedule, self.confirm_cost)
        schedule.save()
        sync_q_schedule(schedule)
        self.audit(
            target=schedule,
            before=before,
            after=snapshot(schedule) | confirmed,
        )
        return schedule
