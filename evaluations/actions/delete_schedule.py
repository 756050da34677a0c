"""DeleteSchedule: remove a schedule (its django-q2 row goes with it:
`evaluations.actions.fire_schedule.drop_q_schedule`); its runs stay."""

from evaluations.actions.schedule_fields import check_may_schedule, snapshot
from sherlock.core.actions import Action


class DeleteSchedule(Action):
    noun = "schedule"
    verb = "delete"

    def __init__(self, *, acting_user, schedule):
        super().__init__(acting_user=acting_user)
        self.schedule = schedule

    def check(self):
        check_may_schedule(self.acting_user, self.schedule.agent, self.schedule.dataset)

    def perform(self):
        schedule = self.schedule
        before = snapshot(schedule)
        self.audit(target=schedule, before=before)
        schedule.delete()
