"""The live htmx pages of evaluations: runs, a run's progress and results grid, costs.

Every page starts from `Run.objects.for_user` (or the agents the user may see), and keeps a
constant number of queries however many rows it shows. `render_page` is the one place that
decides between the full page and an htmx partial.
"""

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from agents.models import Agent
from evaluations.choices import RUN_TERMINAL, CostKind
from evaluations.costs import daily_ledger
from evaluations.models import CaseResult, Run
from sherlock.core.htmx import render_page


def home(request):
    return redirect("evaluations:run-list")


@login_required
def run_list(request):
    runs = Run.objects.for_user(request.user).select_related(
        "agent_version__agent", "dataset_version__dataset"
    )[:100]
    return render_page(
        request,
        "evaluations/run_list.html",
        {"runs": runs},
        partial="evaluations/partials/run_rows.html",
    )


def results_grid(run):
    """Cases x checks of a finished run: one row per case, one cell per check label."""
    labels = list(
        run.dataset_version.checks.order_by("position", "label").values_list("label", flat=True)
    )
    rows = []
    for result in CaseResult.objects.filter(run=run).select_related("case").order_by("case__key"):
        cells = []
        for label in labels:
            summary = result.checks.get(label)
            if summary is None:
                cells.append(None)
                continue
            statuses = ", ".join(f"{k}: {v}" for k, v in summary["statuses"].items())
            cells.append({**summary, "title": statuses})
        rows.append(
            {
                "key": result.case.key,
                "passed": result.passed,
                "flaky": result.flaky,
                "repetitions": result.repetitions,
                "repetitions_passed": result.repetitions_passed,
                "cells": cells,
            }
        )
    return labels, rows


@login_required
def run_detail(request, pk):
    run = get_object_or_404(
        Run.objects.for_user(request.user).select_related(
            "agent_version__agent", "dataset_version__dataset"
        ),
        pk=pk,
    )
    finished = run.status in RUN_TERMINAL
    context = {
        "run": run,
        "finished": finished,
        "percent": round(100 * run.trials_done / run.trials_total) if run.trials_total else 0,
        # A poll that sees the run finish reloads the page once, to show the grid.
        "refresh_grid": finished and request.GET.get("part") == "progress",
    }
    if request.GET.get("part") == "progress" and getattr(request, "htmx", False):
        return render(request, "evaluations/partials/run_progress.html", context)
    context["labels"], context["grid"] = results_grid(run) if finished else ([], [])
    return render(request, "evaluations/run_detail.html", context)


KIND_COLORS = {CostKind.AGENT: "#2e90fa", CostKind.SCORING: "#9e77ed", CostKind.SUMMARY: "#f79009"}


def cost_chart(rows, days, width=720, height=160):
    """A stacked bar per day (agent, scoring, summary) as SVG shapes: no chart library."""
    today = timezone.localdate()
    dates = [today - timedelta(days=n) for n in range(days - 1, -1, -1)]
    per_day = {d: {} for d in dates}
    for row in rows:
        if row["day"] in per_day and row["total_usd"] is not None:
            kind = row["kind"]
            usd = float(row["total_usd"])
            per_day[row["day"]][kind] = per_day[row["day"]].get(kind, 0) + usd
    peak = max((sum(v.values()) for v in per_day.values()), default=0) or 1
    slot = width / len(dates)
    plot = height - 14
    bars, ticks = [], []
    for i, day in enumerate(dates):
        y = plot
        for kind in CostKind.values:
            usd = per_day[day].get(kind, 0)
            if not usd:
                continue
            h = max(1, usd / peak * (plot - 4))
            y -= h
            bars.append(
                {
                    "x": round(i * slot + 2, 1),
                    "y": round(y, 1),
                    "w": round(slot - 4, 1),
                    "h": round(h, 1),
                    "color": KIND_COLORS[kind],
                    "title": f"{day} {kind}: ${usd:.4f}",
                }
            )
        if i % max(1, len(dates) // 7) == 0:
            ticks.append({"x": round(i * slot + 2, 1), "label": day.strftime("%m-%d")})
    legend = [(kind, KIND_COLORS[kind]) for kind in CostKind.values]
    return {"width": width, "height": height, "bars": bars, "ticks": ticks, "legend": legend}


@login_required
def costs(request):
    days = 30
    since = timezone.localdate() - timedelta(days=days - 1)
    rows = daily_ledger(Agent.objects.for_user(request.user), since)
    return render(
        request,
        "evaluations/costs.html",
        {"rows": rows, "days": days, "chart": cost_chart(rows, days)},
    )
