"""Read-only questions the trace pages (and later the API) share: which traces a user sees,
filtered, and one trace's spans as a tree."""

from typing import Any

from django.db.models import Count, Q

from production.choices import TraceState
from production.models import Trace

PAGE_SIZE = 50


def search_text(traces, text):
    """`traces` whose input or output holds `text` (case-insensitive; the first 200
    characters of it)."""
    text = (text or "").strip()[:200]
    if not text:
        return traces
    return traces.filter(Q(input_text__icontains=text) | Q(output_text__icontains=text))


def visible_traces(user, agent_slug="", state="", session="", end_user="", text=""):
    """The traces of the agents `user` may see, newest first, filtered by agent, state,
    session, end user and a text search, with their agent and version and the number of spans
    received (also for open traces, whose `span_count` is set only at completion): one
    query."""
    traces = (
        Trace.objects.for_user(user)
        .select_related("agent", "agent_version")
        .annotate(spans_received=Count("spans"))
        .defer("transcript", "resource")
        .order_by("-received_at", "-id")
    )
    if agent_slug:
        traces = traces.filter(agent__slug=agent_slug)
    if state in TraceState.values:
        traces = traces.filter(state=state)
    if session:
        traces = traces.filter(session=session)
    if end_user:
        traces = traces.filter(end_user=end_user)
    return search_text(traces, text)


def session_traces(user, agent, session):
    """The traces of one session of `agent`, in the order they started by their own clock (a
    conversation's turns; a batch exports several at once), with their versions and scores:
    one query."""
    return (
        Trace.objects.for_user(user)
        .filter(agent=agent, session=session)
        .select_related("agent_version", "online_score")
        .defer("resource")
        .order_by("first_span_at", "received_at", "id")
    )


def span_tree(spans):
    """Spans in tree order (each after its parent, siblings by start), each with its `depth`
    and whether its parent came (`orphan`: a parent id no span of the trace has)."""
    by_id = {span.span_id: span for span in spans}
    children: dict[Any, Any] = {}
    roots = []
    for span in sorted(spans, key=lambda s: (s.start_unix_nano, s.pk)):
        parent = span.parent_span_id
        if parent and parent in by_id and parent != span.span_id:
            children.setdefault(parent, []).append(span)
        else:
            span.orphan = bool(parent)
            roots.append(span)
    ordered, seen = [], set()
    stack = [(root, 0) for root in reversed(roots)]
    while stack:
        span, depth = stack.pop()
        if span.pk in seen:
            continue
        seen.add(span.pk)
        span.depth = depth
        span.orphan = getattr(span, "orphan", False)
        span.duration_ms = (
            (span.end_unix_nano - span.start_unix_nano) / 1e6
            if span.end_unix_nano and span.start_unix_nano
            else None
        )
        ordered.append(span)
        stack.extend((child, depth + 1) for child in reversed(children.get(span.span_id, [])))
    return ordered
