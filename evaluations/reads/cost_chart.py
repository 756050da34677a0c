"""The costs page's chart: a stacked bar per day (agent, scoring, summary) of the daily ledger, as
SVG shapes (no chart library, no CDN)."""

from datetime import timedelta
from typing import Any

from django.utils import timezone

from evaluations.choices import CostKind
from sherlock.core.money import usd as money

KIND_COLORS: dict[str, str] = {
    CostKind.AGENT: "#2e90fa",
    CostKind.SCORING: "#9e77ed",
    CostKind.SUMMARY: "#f79009",
}


def cost_chart(rows, days, width=720, height=160):
    """A stacked bar per day (agent, scoring, summary) as SVG shapes: no chart library. About
    seven dates label the bars, today's always."""
    today = timezone.localdate()
    dates = [today - timedelta(days=n) for n in range(days - 1, -1, -1)]
    per_day: dict[Any, dict[str, Any]] = {d: {} for d in dates}
    for row in rows:
        if row["day"] in per_day and row["total_usd"] is not None:
            kind = row["kind"]
            usd = float(row["total_usd"])
            per_day[row["day"]][kind] = per_day[row["day"]].get(kind, 0) + usd
    peak = max((sum(v.values()) for v in per_day.values()), default=0) or 1
    slot = width / len(dates)
    step = max(1, len(dates) // 7)
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
                    "title": f"{day} {kind}: {money(usd)}",
                }
            )
        # Ticks counted back from today, so the newest bar always has its date; a label is
        # centred under its bar, but the last ends at its bar's right edge and the first starts
        # at its left one, so that neither is cut off at the chart's edges.
        if (len(dates) - 1 - i) % step == 0:
            if i == len(dates) - 1:
                x, anchor = (i + 1) * slot - 2, "end"
            elif i == 0:
                x, anchor = 2, "start"
            else:
                x, anchor = i * slot + slot / 2, "middle"
            ticks.append({"x": round(x, 1), "anchor": anchor, "label": day.strftime("%m-%d")})
    legend = [(kind, KIND_COLORS[kind]) for kind in CostKind.values]
    return {"width": width, "height": height, "bars": bars, "ticks": ticks, "legend": legend}
