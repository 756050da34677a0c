"""What the online scoring tests share: complete production traces made as the completion step
leaves them (state complete, a normalized transcript), and a live version with a previous one
published and retired through the real governance actions."""

import uuid
from datetime import timedelta

from django.utils import timezone

from governance.actions.publish_version import PublishVersion
from governance.actions.request_publication import RequestPublication
from production.choices import TraceState
from production.models import Span, Trace
from tests.support.governance import finish_gate_runs, make_version


def trace(agent, version, transcript, *, trace_id=None, completed_at=None, resource=None, spans=()):
    """A complete trace of `version` with `transcript`; `spans` are attribute dicts."""
    now = timezone.now()
    completed_at = completed_at or now
    row = Trace.objects.create(
        agent=agent,
        agent_version=version,
        trace_id=trace_id or uuid.uuid4().hex,
        state=TraceState.COMPLETE,
        received_at=completed_at - timedelta(seconds=1),
        last_received_at=completed_at,
        completed_at=completed_at,
        transcript=transcript,
        input_text=str(transcript.get("input", "")),
        output_text=str(transcript.get("output", "")),
        resource=resource or {},
        span_count=len(spans),
    )
    for index, attributes in enumerate(spans):
        Span.objects.create(
            trace=row,
            span_id=f"{index + 1:016x}",
            name=f"span {index}",
            attributes=attributes,
            received_at=completed_at,
        )
    return row


def choose_global_gates(agent):
    """Choose the global policy's gate datasets for `agent`, as an Admin would."""
    from governance.models import GateDataset, PublishingPolicy

    for policy in PublishingPolicy.objects.filter(agent__isnull=True):
        for dataset in policy.gate_datasets.all():
            GateDataset.objects.get_or_create(agent=agent, dataset=dataset)


def live_after(agent, author, publisher):
    """(previous, live): two versions of `agent` published in turn through the gate, the
    previous one retired by the second's publication. A policy and gate dataset must exist;
    the global policy's gate datasets are chosen for `agent` (a global list gates no agent by
    itself)."""
    choose_global_gates(agent)
    previous = make_version(agent, author)
    finish_gate_runs(RequestPublication(acting_user=author, agent_version=previous).execute())
    PublishVersion(acting_user=publisher, agent_version=previous).execute()
    live = make_version(agent, author)
    finish_gate_runs(RequestPublication(acting_user=author, agent_version=live).execute())
    PublishVersion(acting_user=publisher, agent_version=live).execute()
    previous.refresh_from_db()
    live.refresh_from_db()
    agent.refresh_from_db()
    return previous, live
