"""The one place that decides between a full page and an htmx partial."""

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers


def render_page(
    request: HttpRequest, template: str, context: dict[str, Any], partial: str | None = None
) -> HttpResponse:
    """The full page, or only `partial` when htmx asks for a piece of it. Both vary on
    `HX-Request`: the browser keeps them apart, so Back to a page whose list htmx refreshed
    shows the page, not the refreshed piece alone."""
    if partial and getattr(request, "htmx", False):
        response = render(request, partial, context)
    else:
        response = render(request, template, context)
    if partial:
        patch_vary_headers(response, ["HX-Request"])
    return response
