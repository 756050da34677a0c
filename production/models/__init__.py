"""Models of the production app, re-exported here: import from `production.models`."""

from production.models.labels import TraceLabel
from production.models.online import (
    OnlineRule,
    OnlineSpend,
    RollbackProposal,
    TraceScore,
)
from production.models.traces import Span, Trace, TraceQuerySet

__all__ = [
    "OnlineRule",
    "OnlineSpend",
    "RollbackProposal",
    "Span",
    "Trace",
    "TraceLabel",
    "TraceQuerySet",
    "TraceScore",
]
