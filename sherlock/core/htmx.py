"""The one place that decides between a full page and an htmx partial (STYLE.md item 13)."""

from django.shortcuts import render


def render_page(request, template, context, partial=None):
    """The full page, or only `partial` when htmx asks for a piece of it."""
    if partial and getattr(request, "htmx", False):
        return render(request, partial, context)
    return render(request, template, context)
