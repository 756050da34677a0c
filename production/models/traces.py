"""The Trace aggregate: the spans one agent's production trace sent, and the trial they make.

A `Trace` is created by the first span of a trace id that reaches the receiver for an agent
(`production.traces.ingest`), whatever its order; every later span of that id joins it, across
export calls. Its state moves once, by the completion task (`production.traces.closing`), which
builds the normalized transcript (`production.traces.normalize`) at that moment. The spans are kept
as they came (attributes and events raw), so a later normalizer can rebuild a transcript.
"""

from django.db import models

from agents.models import AgentScopedQuerySet
from production.choices import Dialect, SpanKind, SpanStatus, TraceState
from sherlock.core.fields import MoneyField


class TraceQuerySet(AgentScopedQuerySet):
    """Traces are visible to whoever may see their agent."""


class Trace(models.Model):
    """One production trace of an agent's version: its state, when its spans came, and the
    production trial normalized from them (`transcript`, in the format of docs/checks.md "The
    transcript"). `input_text`/`output_text` are the transcript's input and output as text,
    for search and lists; tokens, latency and cost are the transcript's figures as columns."""

    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="traces")
    agent_version = models.ForeignKey(
        "agents.AgentVersion",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="traces",
    )
    trace_id = models.CharField(max_length=32, help_text="The OTLP trace id, 32 hex digits.")
    state = models.CharField(max_length=12, choices=TraceState.choices, default=TraceState.OPEN)
    # Span times are the sender's clock; the receipt times are Sherlock's, and the quiescence
    # window is measured on those (a sender's clock may be off).
    first_span_at = models.DateTimeField(null=True, blank=True)
    last_span_at = models.DateTimeField(null=True, blank=True)
    received_at = models.DateTimeField(help_text="When its first span was received.")
    last_received_at = models.DateTimeField(help_text="When its latest span was received.")
    completed_at = models.DateTimeField(null=True, blank=True)
    state_reason = models.CharField(max_length=300, blank=True)
    root_span_id = models.CharField(max_length=16, blank=True)
    span_count = models.PositiveIntegerField(default=0)
    dialect = models.CharField(max_length=16, choices=Dialect.choices, blank=True)
    normalizer_version = models.PositiveIntegerField(null=True, blank=True)
    normalized_at = models.DateTimeField(null=True, blank=True)
    transcript = models.JSONField(null=True, blank=True)
    input_text = models.TextField(blank=True)
    output_text = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    cost_usd = MoneyField(null=True, blank=True, decimal_places=6)
    model = models.CharField(max_length=200, blank=True)
    has_error = models.BooleanField(default=False)
    session = models.CharField(
        max_length=200,
        blank=True,
        help_text="The conversation the trace belongs to: `session.id` or "
        "`gen_ai.conversation.id` (docs/production.md, 'Sessions and users').",
    )
    end_user = models.CharField(
        max_length=200, blank=True, help_text="The end user: `user.id` or `enduser.id`."
    )
    resource = models.JSONField(default=dict, blank=True, help_text="Raw resource attributes.")

    objects = TraceQuerySet.as_manager()

    class Meta:
        ordering = ["-received_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "trace_id"], name="trace_unique_per_agent"),
        ]
        indexes = [
            models.Index(fields=["agent", "-received_at"], name="trace_agent_recent"),
            models.Index(fields=["state", "last_received_at"], name="trace_state_quiet"),
            models.Index(fields=["received_at"], name="trace_received"),
            # Partial: a trace is inserted with neither (they are read at completion), so the
            # receiver's inserts, hundreds a second, do not maintain them.
            models.Index(
                fields=["agent", "session", "received_at"],
                name="trace_agent_session",
                condition=~models.Q(session=""),
            ),
            models.Index(
                fields=["agent", "end_user", "received_at"],
                name="trace_agent_user",
                condition=~models.Q(end_user=""),
            ),
        ]

    def __str__(self):
        return f"{self.agent.slug} trace {self.trace_id}"


class Span(models.Model):
    """One span as it came: its ids, name, kind, times, status, instrumentation scope, and its
    attributes and events as OTLP's JSON values decoded to plain JSON (kept raw)."""

    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="spans")
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)
    name = models.CharField(max_length=500)
    kind = models.PositiveSmallIntegerField(choices=SpanKind.choices, default=0)
    start_time = models.DateTimeField(null=True, blank=True)
    end_time = models.DateTimeField(null=True, blank=True)
    start_unix_nano = models.BigIntegerField(default=0)
    end_unix_nano = models.BigIntegerField(default=0)
    status_code = models.PositiveSmallIntegerField(choices=SpanStatus.choices, default=0)
    status_message = models.TextField(blank=True)
    scope_name = models.CharField(max_length=300, blank=True)
    scope_version = models.CharField(max_length=100, blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    events = models.JSONField(default=list, blank=True)
    received_at = models.DateTimeField()

    class Meta:
        ordering = ["start_unix_nano", "id"]
        indexes = [models.Index(fields=["trace", "span_id"], name="span_trace_span_id")]

    def __str__(self):
        return f"{self.span_id} {self.name}"
