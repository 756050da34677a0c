"""django-q2 tasks: thin, idempotent, and taking ids only."""

from production.online import scoring
from production.traces import closing, retention


def complete_traces(trace_ids=None):
    """Decide due traces (those of `trace_ids`, or every open one: the minute's sweep)."""
    return closing.complete_traces(trace_ids)


def sweep_traces():
    """The schedule's tick: decide every due trace, rebuild stale trials."""
    return closing.complete_traces()


def delete_old_traces():
    """The daily retention task (`SHERLOCK_TRACE_RETENTION_DAYS`)."""
    return retention.delete_old_traces()


def score_traces(trace_ids):
    """Score these complete traces under their agents' online rules (skips scored ones)."""
    return scoring.score_traces(trace_ids)


def sweep_online_scoring():
    """The minute's sweep (`sherlock-online-scoring`): score every complete trace left
    without a score, and take back the claims of workers that died."""
    return scoring.sweep()
