"""Models of the production app, re-exported here: import from `production.models`."""

from production.models.traces import Span, Trace, TraceQuerySet

__all__ = ["Span", "Trace", "TraceQuerySet"]
