"""Read-only questions the trace pages (and later the API) share: which traces a user sees,
filtered, and one trace's spans as a tree (STYLE.md item 19)."""

from django.db.models import Count

from production.choices import TraceState
from production.models import Trace

PAGE_SIZE = 50


def visible_traces(user, agent_slug="", state=""):
    """The traces of the agents `user` may see, newest first, filtered by agent and state, with
    their agent and version and the number of spans received (also for open traces, whose
    `span_count` is set only at completion): one query."""
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
    return traces


def span_tree(spans):
    """Spans in tree order (each after its parent, siblings by start), each with its `depth`
    and whether its parent came (`orphan`: a parent id no span of the trace has)."""
    by_id = {span.span_id: span for span in spans}
    children = {}
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
