"""The trends page (`/trends/?agent=SLUG&dataset=SLUG`): how each check moves over time.

An informative check is "scored, shown and tracked over time" (docs/checks.md); this is where.
For one agent and one dataset, every completed run the user may see (`Run.objects.for_user`),
oldest first, up to `MAX_RUNS`: each check's mean score and pass rate, and the run's case pass
rate, as two server-rendered SVG charts (no chart library, no CDN, like the costs page) and a
table, each run marked with the agent version it evaluated (a scheduled run's tick ends in
"(s)"). Checks are matched across dataset
versions by label.

`check_stats(runs)` is what both this page and the compare page read
(`evaluations.views.compare`): the stored figures of finished runs, one aggregate query for the
others, so the page keeps a constant number of queries however many runs it shows.
"""

from typing import Any

from django.contrib.auth.decorators import login_required

from evaluations.choices import RunPurpose, RunStatus
from evaluations.models import Run
from evaluations.reads.trends import check_stats
from sherlock.core.htmx import render_page

MAX_RUNS = 60
# Scheduled runs (`RunSchedule`) are trended like any completed run; their tick says so, and the
# table names each run's purpose.
SCHEDULED_MARK = " (s)"
# One colour per check, in the checks' order; the case pass rate is drawn in black.
PALETTE = ["#2e90fa", "#9e77ed", "#f79009", "#12b76a", "#f04438", "#0ba5ec", "#ee46bc", "#667085"]


def _labels(stats):
    """Every check label of ``stats``, first seen first (the query orders by position)."""
    labels: dict[Any, Any] = {}
    for per_run in stats.values():
        for label, row in per_run.items():
            labels.setdefault(label, row["mode"])
    return labels


def trend_chart(points, series, width=720, height=200):
    """One SVG line chart: ``points`` are the runs (x, evenly spaced, oldest first), ``series``
    a list of ``{"name", "color", "values", "bold"}`` with one value in 0..1 (or None: no
    point) per run. Each run's tick names it and its version; version changes are drawn as dashed
    verticals, labelled with the new version."""
    left, right, top, bottom = 34, 30, 12, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    step = plot_w / max(1, len(points) - 1)

    def x(i):
        return round(left + (i * step if len(points) > 1 else plot_w / 2), 1)

    def y(value):
        return round(top + (1 - min(1.0, max(0.0, value))) * plot_h, 1)

    lines = []
    for item in series:
        dots = [
            {"x": x(i), "y": y(v), "title": f"{points[i]['label']} {item['name']}: {v:.3f}"}
            for i, v in enumerate(item["values"])
            if v is not None
        ]
        lines.append(
            {
                **item,
                "path": " ".join(f"{d['x']},{d['y']}" for d in dots),
                "dots": dots,
            }
        )
    versions, previous = [], None
    for i, point in enumerate(points):
        if point["version"] != previous:
            versions.append({"x": x(i), "label": f"v{point['version']}"})
            previous = point["version"]
    grid = [{"y": y(v), "label": f"{v:.2f}"} for v in (0, 0.25, 0.5, 0.75, 1)]
    ticks = [
        {
            "x": x(i),
            "label": f"#{p['id']} v{p['version']}{SCHEDULED_MARK if p.get('scheduled') else ''}",
        }
        for i, p in enumerate(points)
    ]
    return {
        "width": width,
        "height": height,
        "left": left,
        "right": width - right,
        "top": top,
        "bottom": height - bottom,
        "lines": lines,
        "versions": versions,
        "grid": grid,
        "ticks": ticks if len(ticks) <= 20 else ticks[:: len(ticks) // 20 + 1],
    }


def trends_context(user, agent_slug, dataset_slug):
    """The runs of ``agent_slug`` on ``dataset_slug`` the user may see, with their checks'
    stats, the table rows and the two charts. Four queries whatever the number of runs."""
    runs = list(
        Run.objects.for_user(user)
        .filter(
            agent_version__agent__slug=agent_slug,
            dataset_version__dataset__slug=dataset_slug,
            status=RunStatus.COMPLETED,
        )
        .select_related("agent_version", "dataset_version")
        .order_by("-created_at", "-pk")[:MAX_RUNS]
    )[::-1]
    stats = check_stats(runs)
    labels = _labels(stats)
    colors = {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(labels)}
    rows = []
    for run in runs:
        per_run = stats.get(run.pk, {})
        rows.append(
            {
                "run": run,
                "case_pass_rate": (run.summary or {}).get("case_pass_rate"),
                # Cases without a verdict stand beside the rate, never inside it.
                "unscored": (run.summary or {}).get("unscored") or 0,
                "checks": [per_run.get(label) for label in labels],
            }
        )
    points = [
        {
            "id": run.pk,
            "version": run.agent_version.number,
            "label": f"#{run.pk}",
            "scheduled": run.purpose == RunPurpose.SCHEDULED,
        }
        for run in runs
    ]
    case_line = {
        "name": "case pass rate",
        "color": "#101828",
        "bold": True,
        "values": [row["case_pass_rate"] for row in rows],
    }

    def check_lines(key):
        return [
            {
                "name": label,
                "color": colors[label],
                "bold": False,
                "values": [(stats.get(run.pk, {}).get(label) or {}).get(key) for run in runs],
            }
            for label in labels
        ]

    return {
        "runs": runs,
        "rows": rows,
        "labels": [(label, mode, colors[label]) for label, mode in labels.items()],
        "score_chart": trend_chart(points, check_lines("mean")) if runs else None,
        "pass_chart": trend_chart(points, [case_line, *check_lines("pass_rate")]) if runs else None,
        "max_runs": MAX_RUNS,
    }


@login_required
def trends(request):
    user = request.user
    agent_slug = request.GET.get("agent", "")
    dataset_slug = request.GET.get("dataset", "")
    # The agent and the dataset are pickers (/pick/agent/, /pick/dataset/, by slug): the page
    # lists neither; the chosen slugs are their own text.
    context = {
        "agent": agent_slug,
        "dataset": dataset_slug,
        "chosen": bool(agent_slug and dataset_slug),
    }
    if context["chosen"]:
        context.update(trends_context(user, agent_slug, dataset_slug))
    return render_page(request, "evaluations/trends.html", context)
