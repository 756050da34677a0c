"""PauseSchedule and ResumeSchedule: stop a schedule without losing it, and start it again."""

from evaluations.actions.schedule_fields import (
    check_may_schedule,
    check_runs_here,
    sync_q_schedule,
)
from sherlock.core.actions import Action


class SetScheduleActive(Action):
    """A paused schedule keeps its django-q2 row with `repeats=0`, which django-q2 never fires;
    resuming sets the next run from now. `active` is what the verb leaves the schedule."""

    noun = "schedule"
    active = False

    def __init__(self, *, acting_user, schedule):
        super().__init__(acting_user=acting_user)
        self.schedule = schedule

    def check(self):
        check_may_schedule(self.acting_user, self.schedule.agent, self.schedule.dataset)
        if self.active:
            check_runs_here(self.schedule)  # a schedule resumed must be one that can run

    def perform(self):
        schedule = self.schedule
        before = {"active": schedule.active}
        schedule.active = self.active
        schedule.save(update_fields=["active"])
        sync_q_schedule(schedule)
        self.audit(target=schedule, before=before, after={"active": schedule.active})
        return schedule


class PauseSchedule(SetScheduleActive):
    verb = "pause"
    active = False


class ResumeSchedule(SetScheduleActive):
    verb = "resume"
    active = True


def set_schedule_active(*, acting_user, schedule, active):
    """The verb that leaves `schedule` `active` (the page and the API take a flag)."""
    verb = ResumeSchedule if active else PauseSchedule
    return verb(acting_user=acting_user, schedule=schedule)
