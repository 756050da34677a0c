"""Signals of the evaluations app: the messages that travel up the dependency line.

`run_finished(sender=Run, run_id=int, status=str)` is sent on commit, exactly once per run,
when the run reaches a terminal state (completed, failed or cancelled) and its case results and
summary are stored. `governance` listens to make the gate decision of a publish request.
"""

from django.dispatch import Signal

run_finished = Signal()

# `schedule_failed(sender=RunSchedule, schedule_id=int, error=str)` is sent on commit when a
# schedule fires but cannot start its run (no live agent version, no frozen dataset version,
# the creator lost the right to schedule, StartRun refused). `evaluations.tasks.run_schedule`
# sends it; governance (webhooks) may listen.
schedule_failed = Signal()
