"""Choices of the production app, and the allowed trace transitions (declared once, here)."""

from django.db import models

from sherlock.core.states import StateMachine


class TraceState(models.TextChoices):
    OPEN = "open", "open"
    COMPLETE = "complete", "complete"
    INCOMPLETE = "incomplete", "incomplete"


# A trace is open while spans may still come; it ends complete (its root span ended, or the
# quiescence window passed with every parent present) or incomplete (the window passed and a
# span's parent never came). Ended is final: a span arriving later joins the trace and its
# transcript is rebuilt, but the state stays (docs/production.md, "When a trace is complete").
TRACE_TRANSITIONS = {
    TraceState.OPEN: {TraceState.COMPLETE, TraceState.INCOMPLETE},
}
TRACE_STATES = StateMachine("Trace", "state", TRACE_TRANSITIONS)


class Dialect(models.TextChoices):
    """Which conventions a trace's spans were written in (what the normalizer read)."""

    GENAI = "genai", "GenAI semantic conventions >= 1.37"
    GENAI_LEGACY = "genai_legacy", "GenAI semantic conventions <= 1.36"
    OPENINFERENCE = "openinference", "OpenInference"
    MIXED = "mixed", "mixed"
    UNKNOWN = "unknown", "no GenAI attributes"


class SpanKind(models.IntegerChoices):
    """OTLP's Span.SpanKind values."""

    UNSPECIFIED = 0, "unspecified"
    INTERNAL = 1, "internal"
    SERVER = 2, "server"
    CLIENT = 3, "client"
    PRODUCER = 4, "producer"
    CONSUMER = 5, "consumer"


class SpanStatus(models.IntegerChoices):
    """OTLP's Status.StatusCode values."""

    UNSET = 0, "unset"
    OK = 1, "ok"
    ERROR = 2, "error"
