"""django-q2 tasks: thin, idempotent, and taking ids only (STYLE.md item 5)."""

from production.online import scoring


def score_traces(trace_ids):
    """Score these complete traces under their agents' online rules (skips scored ones)."""
    return scoring.score_traces(trace_ids)


def sweep_online_scoring():
    """The minute's sweep (`sherlock-online-scoring`): score every complete trace left
    without a score, and take back the claims of workers that died."""
    return scoring.sweep()
