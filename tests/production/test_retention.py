"""Retention (`SHERLOCK_TRACE_RETENTION_DAYS`): traces received before the window go with their
spans, by the scheduled task; newer traces and the audit log stay."""

from datetime import timedelta

from django.utils import timezone
from django_q.models import Schedule

from governance.models import AuditEntry
from production import tasks
from production.models import Span, Trace
from sherlock.core.audit import audit
from tests.support.otel_clients import export_body, finished_spans

RESOURCE = {"sherlock.agent": "support-bot"}


def send(client, key, name):
    def build(tracer):
        with tracer.start_as_current_span(name), tracer.start_as_current_span("child"):
            pass

    client.post(
        "/api/v1/v1/traces",
        data=export_body(finished_spans(RESOURCE, build)),
        content_type="application/x-protobuf",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    return Trace.objects.get(spans__name=name)


def test_old_traces_are_deleted_with_their_spans_and_the_audit_log_stays(
    client, agent, builder_key, settings, builder
):
    settings.SHERLOCK_TRACE_RETENTION_DAYS = 7
    old = send(client, builder_key, "old")
    new = send(client, builder_key, "new")
    Trace.objects.filter(pk=old.pk).update(received_at=timezone.now() - timedelta(days=8))
    audit("production.trace.add_to_dataset", actor=builder, target=old, after={"case": "k"})
    entries = AuditEntry.objects.count()

    assert tasks.delete_old_traces() == 1
    assert list(Trace.objects.values_list("pk", flat=True)) == [new.pk]
    assert not Span.objects.filter(trace_id=old.pk).exists()
    assert Span.objects.filter(trace=new).count() == 2
    assert AuditEntry.objects.count() == entries
    assert AuditEntry.objects.get(action="production.trace.add_to_dataset").target_id == str(old.pk)


def test_zero_days_keeps_every_trace(client, agent, builder_key, settings):
    settings.SHERLOCK_TRACE_RETENTION_DAYS = 0
    old = send(client, builder_key, "old")
    Trace.objects.filter(pk=old.pk).update(received_at=timezone.now() - timedelta(days=999))
    assert tasks.delete_old_traces() == 0 and Trace.objects.count() == 1


def test_the_sweep_and_the_retention_are_scheduled(db):
    funcs = set(Schedule.objects.values_list("func", flat=True))
    assert {"production.tasks.sweep_traces", "production.tasks.delete_old_traces"} <= funcs
