"""CreateSchedule: schedule a dataset against an agent, with the django-q2 row that fires it."""

from evaluations.actions.schedule_fields import (
    check_cost_confirmed,
    check_may_schedule,
    snapshot,
    sync_q_schedule,
    validate,
)
from evaluations.models import RunSchedule
from sherlock.core.actions import Action


class CreateSchedule(Action):
    """`fields`: dataset, dataset_version (None: latest frozen), agent, agent_version (None:
    live), repetitions, cron or interval_minutes, active. An Editor of the dataset or a Builder
    of the agent may; the `RunSchedule`, its django-q2 `Schedule` and the audit entry are written
    in one transaction. A month estimated above SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD needs
    `confirm_cost=True`; the entry then records the month's estimate and the limit confirmed."""

    noun = "schedule"
    verb = "create"

    def __init__(self, *, acting_user, confirm_cost=False, **fields):
        super().__init__(acting_user=acting_user)
        self.schedule = RunSchedule(created_by=acting_user, **fields)
        self.confirm_cost = confirm_cost
        self.confirmed = {}

    def check(self):
        check_may_schedule(self.acting_user, self.schedule.agent, self.schedule.dataset)
        validate(self.schedule)
        # A month above SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD needs `confirm_cost`.
        self.confirmed = check_cost_confirmed(self.schedule, self.confirm_cost)

    def perform(self):
        schedule = self.schedule
        schedule.save()
        sync_q_schedule(schedule)
        self.audit(
            target=schedule,
            after=snapshot(schedule) | self.confirmed,
        )
        return schedule
