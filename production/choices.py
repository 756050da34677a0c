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


class ScoreState(models.TextChoices):
    """What online scoring made of a complete trace (`production.TraceScore`)."""

    SCORING = "scoring", "being scored"
    SCORED = "scored", "scored"
    CAPPED = "capped", "not scored: daily judge spend cap reached"
    SKIPPED = "skipped", "not scored: left out by the rule"


class ProposalState(models.TextChoices):
    OPEN = "open", "open"
    CONFIRMED = "confirmed", "confirmed"
    DISMISSED = "dismissed", "dismissed"


# Enforced by `PROPOSAL_STATES`, the only writer of a proposal's state after it is opened (the
# Publisher's two verbs: `ConfirmRollbackProposal`, `DismissRollbackProposal`).
PROPOSAL_TRANSITIONS = {
    ProposalState.OPEN: {ProposalState.CONFIRMED, ProposalState.DISMISSED},
}
PROPOSAL_STATES = StateMachine("RollbackProposal", "state", PROPOSAL_TRANSITIONS)

# A score is created `scoring` (the worker's claim) or directly in its final state; `scoring`
# ends once, by `SCORE_STATES` (`production.online.scoring`).
SCORE_TRANSITIONS = {
    ScoreState.SCORING: {ScoreState.SCORED, ScoreState.CAPPED, ScoreState.SKIPPED},
}
SCORE_STATES = StateMachine("TraceScore", "state", SCORE_TRANSITIONS)
