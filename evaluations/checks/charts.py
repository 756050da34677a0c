"""Vega-Lite chart specs: finding one in an output, listing its marks, naming their family.

Charts are compared by mark family, not by the literal mark, because people and agents name
the same chart differently: a "column chart" is a `bar` mark, a "pie" an `arc`, a "scatter" a
`point` or `circle` (evaluators.md §5.5). A mark may be a string or `{"type": ...}`; layered,
concatenated, faceted and repeated specs contribute the marks of their parts.
"""

from __future__ import annotations

import json
import re

from .base import embedded_json_values

# family -> names that mean it; the family name itself is the Vega-Lite mark.
FAMILIES = {
    "bar": ("bar", "column", "histogram", "stacked_bar", "grouped_bar", "horizontal_bar"),
    "line": ("line", "trail", "time_series", "multi_line"),
    "area": ("area", "stacked_area", "streamgraph"),
    "point": ("point", "circle", "square", "scatter", "scatterplot", "bubble", "dot"),
    "arc": ("arc", "pie", "donut", "doughnut", "radial"),
    "rect": ("rect", "heatmap"),
    "tick": ("tick", "strip"),
    "rule": ("rule",),
    "text": ("text", "label"),
    "boxplot": ("boxplot", "box"),
    "errorbar": ("errorbar", "error_bar"),
    "errorband": ("errorband", "error_band"),
    "geoshape": ("geoshape", "map", "choropleth"),
    "image": ("image",),
}
_FAMILY_OF = {name: family for family, names in FAMILIES.items() for name in names}
_COMPOSITES = ("layer", "concat", "hconcat", "vconcat")


class ChartError(ValueError):
    """A value that is not a Vega-Lite spec with at least one mark."""


def family(name: str) -> str | None:
    """`"Pie chart"` -> `arc`; None for a name outside the table."""
    key = re.sub(r"[\s\-]+", "_", str(name).strip().lower())
    key = re.sub(r"_(chart|plot|graph)$", "", key)
    return _FAMILY_OF.get(key)


def marks(spec: dict) -> list[str]:
    found = []
    mark = spec.get("mark")
    if isinstance(mark, dict):
        mark = mark.get("type")
    if isinstance(mark, str):
        found.append(mark)
    for key in _COMPOSITES:
        for part in spec.get(key) or []:
            if isinstance(part, dict):
                found += marks(part)
    if isinstance(spec.get("spec"), dict):  # facet and repeat wrap one inner spec
        found += marks(spec["spec"])
    return found


def find_spec(value) -> dict:
    """The chart in an output: the output itself, its `chart` key, or JSON inside its text."""
    candidates = [value]
    if isinstance(value, str):
        try:
            candidates = [json.loads(value)]
        except ValueError:
            candidates = embedded_json_values(value)
    for candidate in candidates:
        if isinstance(candidate, dict) and not marks(candidate) and "chart" in candidate:
            candidate = candidate["chart"]
        if isinstance(candidate, dict) and marks(candidate):
            return candidate
    raise ChartError("no Vega-Lite spec with a mark found")
