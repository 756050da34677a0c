"""The production pages: the traces a user may see, and one trace (its state, the trial it
made, its spans as a tree with their raw attributes, its scores) with "Add to dataset"."""

import json
from decimal import Decimal
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from agents.models import Agent
from evaluations.models import Check, DatasetVersion
from production.actions.add_trace_to_dataset import AddTraceToDataset, default_key
from production.actions.label_trace_result import LabelTraceResult
from production.choices import TraceState
from production.models import Trace, TraceScore
from production.online.labels import queue
from production.reads.traces import PAGE_SIZE, session_traces, span_tree, visible_traces
from sherlock.core.errors import ActionError
from sherlock.core.hidden import visible_or_404
from sherlock.core.htmx import render_page
from sherlock.core.inputs import parse_id


@login_required
def trace_list(request):
    """The newest traces first, 50 a page, filtered by agent, state, session and end user, and
    searched in their input and output."""
    filters = {
        name: request.GET.get(name, "").strip()[:200]
        for name in ("agent", "state", "session", "user", "q")
    }
    traces = visible_traces(
        request.user,
        filters["agent"],
        filters["state"],
        session=filters["session"],
        end_user=filters["user"],
        text=filters["q"],
    )
    page = Paginator(traces, PAGE_SIZE).get_page(request.GET.get("page"))
    return render_page(
        request,
        "production/trace_list.html",
        {
            "page": page,
            "agent_slug": filters["agent"],
            "state": filters["state"],
            "filters": filters,
            "filtered": any(filters.values()),
            "query": urlencode({k: v for k, v in filters.items() if v}),
            "states": TraceState.choices,
        },
    )


@login_required
def session_detail(request, slug):
    """One session of an agent (`?id=`): its traces as the turns of a conversation, oldest
    first, with the session's totals."""

    agent = visible_or_404(request, Agent.objects.for_user(request.user), slug=slug)
    session = request.GET.get("id", "").strip()[:200]
    turns = list(session_traces(request.user, agent, session)) if session else []
    totals = {
        "turns": len(turns),
        "errors": sum(1 for t in turns if t.has_error),
        "tokens": sum((t.input_tokens or 0) + (t.output_tokens or 0) for t in turns),
        "cost": sum((t.cost_usd for t in turns if t.cost_usd is not None), Decimal(0)),
        "priced": all(t.cost_usd is not None for t in turns),
        "users": sorted({t.end_user for t in turns if t.end_user}),
    }
    response = render_page(
        request,
        "production/session.html",
        {"agent": agent, "session": session, "turns": turns, "totals": totals},
    )
    if session and not turns:
        response.status_code = 404  # no such session of this agent (the page says so)
    return response


def _pretty(value):
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


@login_required
def trace_detail(request, pk):
    trace = visible_or_404(
        request,
        Trace.objects.for_user(request.user).select_related("agent", "agent_version"),
        pk=pk,
    )
    spans = span_tree(list(trace.spans.all()))
    for span in spans:
        span.attributes_text = _pretty(span.attributes)
        span.events_text = _pretty(span.events) if span.events else ""
    transcript = trace.transcript or {}
    tool_calls = [
        {
            **call,
            "arguments_text": _pretty(call.get("arguments")),
            "result_text": _pretty(call.get("result")),
        }
        for call in transcript.get("tool_calls") or []
    ]
    # The draft is a picker (/pick/dataset-draft/): the page only asks whether there is any, and
    # reads the one a refused "Add to dataset" chose, to show it again with the typed key.
    drafts = DatasetVersion.objects.drafts_to_edit(request.user)
    asked = parse_id(request.GET.get("draft", ""))
    chosen = drafts.filter(pk=asked).first() if asked else None
    return render_page(
        request,
        "production/trace_detail.html",
        {
            "trace": trace,
            "spans": spans,
            "transcript": transcript,
            "input_text": _pretty(transcript.get("input")),
            "output_text": _pretty(transcript.get("output")),
            "tool_calls": tool_calls,
            "contexts": transcript.get("contexts") or [],
            "resource_text": _pretty(trace.resource),
            "drafts": chosen is not None or drafts.exists(),
            "chosen_draft": chosen,
            "default_key": request.GET.get("key") or default_key(trace),
            "quiet_seconds": f"{settings.SHERLOCK_TRACE_QUIET_SECONDS} s",
        },
    )


@login_required
@require_POST
def add_to_dataset(request, pk):
    """ "Add to dataset": the trace as a case of the chosen draft version (AddTraceToDataset)."""
    trace = visible_or_404(
        request, Trace.objects.for_user(request.user).select_related("agent"), pk=pk
    )
    chosen = request.POST.get("dataset_version") or ""
    if not chosen:
        messages.error(request, "Choose the draft version to add the case to.")
        return redirect("production:trace-detail", pk=trace.pk)
    version = visible_or_404(
        request, DatasetVersion.objects.drafts_to_edit(request.user), pk=chosen
    )
    key = (request.POST.get("key") or "").strip() or None
    try:
        case_version = AddTraceToDataset(
            acting_user=request.user,
            trace=trace,
            dataset_version=version,
            key=key,
            contexts_as_reference=request.POST.get("contexts_as_reference") == "on",
        ).execute()
    except ActionError as exc:
        messages.error(request, str(exc))
        query = urlencode({"draft": version.pk, "key": key or ""})
        return redirect(f"{reverse('production:trace-detail', args=[trace.pk])}?{query}")
    else:
        url = reverse("admin:evaluations_datasetversion_change", args=[version.pk])
        messages.success(
            request,
            format_html(
                'Case {} added to {}: give it its expected output on <a href="{}">the '
                "draft's page</a>.",
                case_version.case.key,
                version,
                url,
            ),
        )
    return redirect("production:trace-detail", pk=trace.pk)


@login_required
def label_queue(request):
    """Production traces to label: the model-check results of the dataset checks online rules
    reuse, for an Editor of those datasets; a label posted here counts toward the check's
    calibration."""

    if request.method == "POST":
        score_row = visible_or_404(
            request,
            TraceScore.objects.for_user(request.user).select_related("trace", "agent", "rule"),
            pk=parse_id(request.POST.get("trace_score", "")) or 0,
        )
        check = visible_or_404(
            request,
            Check.objects.select_related("dataset_version__dataset"),
            pk=parse_id(request.POST.get("check", "")) or 0,
        )
        verdict = request.POST.get("verdict", "")
        raw_score = request.POST.get("score", "").strip()
        passed = {"pass": True, "fail": False}.get(verdict)
        try:
            score = float(raw_score) if raw_score else None
        except ValueError:
            score = -1.0  # refused by the action, on its field
        try:
            LabelTraceResult(
                acting_user=request.user,
                trace_score=score_row,
                check=check,
                passed=passed,
                score=score,
                note=request.POST.get("note", ""),
            ).execute()
        except ActionError as exc:
            messages.error(request, str(exc))
        else:
            trace_name = score_row.trace.trace_id[:12]
            messages.success(request, f"Labelled {check.label} on trace {trace_name}.")
        return redirect("production:labels")
    rows = queue(request.user)
    return render_page(request, "production/labels.html", {"rows": rows})
