"""``{% load runs %}{% start_run_form %}``: the "Start a run" form on the run list, for whoever
may start runs (nothing for others), without touching the run list's view
(evaluations/views/start_run.py answers the form); ``{{ reason.fix|fix_links }}``: a gate's fix
with the paths it names (the form that registers a tool) as links."""

import re

from django import template
from django.utils.html import format_html, format_html_join

from evaluations.verdict import gate_label
from evaluations.views.start_run_form import StartRunForm, may_start_runs

register = template.Library()


@register.inclusion_tag("evaluations/partials/start_run.html", takes_context=True)
def start_run_form(context):
    user = context["request"].user
    if not may_start_runs(user):
        return {"start_form": None}
    return {"start_form": StartRunForm(user), "start_previews": None, "request": context["request"]}


# The pages a fix may name: the admin's forms, filled in by their query (`register_tool_url`).
_PATH = re.compile(r"(/admin/[\w/]+/(?:\?[\w=&%.+-]*)?)")


@register.filter
def fix_links(text):
    """`text`, escaped, with each admin path in it a link to that page."""
    parts = _PATH.split(str(text or ""))
    return format_html_join(
        "",
        "{}",
        (
            (format_html('<a href="{}">{}</a>', part, part) if index % 2 else part,)
            for index, part in enumerate(parts)
        ),
    )


@register.filter
def gate_words(code):
    """A gate's code in the pages' words ("unknown_effects" is "unknown effects")."""

    return gate_label(code)
