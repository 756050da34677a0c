"""PauseSchedule: stop (or, with `active=True`, resume) a schedule without losing it."""

from evaluations.actions.schedule_fields import (
    check_may_schedule,
    check_runs_here,
    sync_q_schedule,
)
from sherlock.core.actions import Action
from sherlock.core.audit import audit


class PauseSchedule(Action):
    """A paused schedule keeps its django-q2 row with `repeats=0`, which django-q2 never fires;
    resuming sets the next run from now."""

    noun = "schedule"

    @property
    def verb(self):  # the refusal's verb, as the entry's code says pause or resume
        return "resume" if self.active else "pause"

    def __init__(self, *, acting_user, schedule, active=False):
        super().__init__(acting_user=acting_user)
        self.schedule = schedule
        self.active = active

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
        audit(
            "evaluations.schedule.resume" if self.active else "evaluations.schedule.pause",
            actor=self.acting_user,
            target=schedule,
            before=before,
            after={"active": schedule.active},
        )
        return schedule


class ResumeSchedule(PauseSchedule):
    """PauseSchedule with `active=True` (the admin's "resume" action takes a class)."""

    def __init__(self, *, acting_user, schedule):
        super().__init__(acting_user=acting_user, schedule=schedule, active=True)
