"""A webhook receiver on loopback for the webhook tests: the loopback agent server
(`loopback_agent`), answering each POST with the next status of `statuses` (the last one
repeats); `received` keeps each request with its exact body bytes (the signature is over them).

`run_retries()` plays the cluster's scheduler for the retries the delivery task leaves behind
(django-q2 ONCE schedules): it waits until the next is due and runs django-q2's own scheduler
pass, which queues the task (in the tests' sync mode: runs it in-process) and deletes the row.
"""

import ast
import time
from datetime import timedelta

from django.utils import timezone

from tests.support.loopback_agent import LoopbackAgent

DELIVER = "governance.webhooks.deliver"


class LoopbackReceiver(LoopbackAgent):
    def __init__(self, statuses=(200,)):
        self.statuses = list(statuses)
        super().__init__(answer=self._answer)

    def _answer(self, request):
        status = self.statuses[min(request["n"], len(self.statuses)) - 1]
        return status, f"answer {status}".encode()

    @property
    def received(self):
        return [{**r, "body": r["raw"]} for r in self.requests]

    @property
    def url(self):
        return super().url + "/hook"


def retries():
    """The webhook retries waiting in django-q2's schedule table."""
    from django_q.models import Schedule

    return Schedule.objects.filter(func=DELIVER)


def run_retries(limit=20):
    """Run the scheduler until no webhook retry is left; returns the retries it saw, in order,
    as `(attempt, next_run)`. The other schedules (the migrations' reaper and the like, due at
    once in a fresh database) are moved a day on first, so that only the retries run here."""
    from django_q.brokers import get_broker
    from django_q.models import Schedule
    from django_q.scheduler import scheduler

    Schedule.objects.exclude(func=DELIVER).update(next_run=timezone.now() + timedelta(days=1))
    seen = []
    while (due := retries().order_by("next_run").first()) is not None:
        assert len(seen) < limit, "the retries never stop"
        seen.append((ast.literal_eval(due.kwargs)["attempt"], due.next_run))
        wait = (due.next_run - timezone.now()).total_seconds()
        time.sleep(max(wait, 0) + 0.001)  # the scheduler takes next_run < now
        scheduler(broker=get_broker())
    return seen
