"""Signals of the evaluations app: the one message that travels up the dependency line.

`run_finished(sender=Run, run_id=int, status=str)` is sent on commit, exactly once per run,
when the run reaches a terminal state (completed, failed or cancelled) and its case results and
summary are stored. `governance` listens to make the gate decision of a publish request.
"""

from django.dispatch import Signal

run_finished = Signal()
