"""CreateSchedule: schedule a dataset against an agent, with the django-q2 row that fires it."""

from evaluations.actions.schedule_fields import (
    check_may_schedule,
    snapshot,
    sync_q_schedule,
    validate,
)
from evaluations.models import RunSchedule
from sherlock.core.actions import Action
from sherlock.core.audit import audit


class CreateSchedule(Action):
    """`fields`: dataset, dataset_version (None: latest frozen), agent, agent_version (None:
    live), repetitions, cron or interval_minutes, active. An Editor of the dataset or a Builder
    of the agent may; the `RunSchedule`, its django-q2 `Schedule` and the audit entry are written
    in one transaction."""

    noun = "schedule"
    verb = "create"

    def __init__(self, *, acting_user, **fields):
        super().__init__(acting_user=acting_user)
        self.schedule = RunSchedule(created_by=acting_user, **fields)

    def check(self):
        check_may_schedule(self.acting_user, self.schedule.agent, self.schedule.dataset)
        validate(self.schedule)

    def perform(self):
        schedule = self.schedule
        schedule.save()
        sync_q_schedule(schedule)
        audit(
            "evaluations.schedule.create",
            actor=self.acting_user,
            target=schedule,
            after=snapshot(schedule),
        )
        return schedule
