"""Retention: traces received more than `SHERLOCK_TRACE_RETENTION_DAYS` days ago are deleted
with their spans (0 keeps them for ever). The audit log is never touched: an entry that names a
trace (a case added from it) keeps its text, and a case made from a trace keeps the trace id in
its tags; only the spans go. Deleted in batches, so one day's millions of spans never sit in
one transaction."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from production.models import Span, Trace

BATCH = 1000


def delete_old_traces(now=None):
    """Delete the traces past retention; the number deleted."""
    days = settings.SHERLOCK_TRACE_RETENTION_DAYS
    if not days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    deleted = 0
    while True:
        pks = list(
            Trace.objects.filter(received_at__lt=cutoff).values_list("pk", flat=True)[:BATCH]
        )
        if not pks:
            return deleted
        Span.objects.filter(trace_id__in=pks).delete()
        deleted += Trace.objects.filter(pk__in=pks).delete()[1].get("production.Trace", 0)
