"""``{% load runs %}{% start_run_form %}``: the "Start a run" form on the run list, for whoever
may start runs (nothing for others), without touching the run list's view
(evaluations/views/start_run.py answers the form)."""

from django import template

from evaluations.views.start_run_form import StartRunForm, may_start_runs

register = template.Library()


@register.inclusion_tag("evaluations/partials/start_run.html", takes_context=True)
def start_run_form(context):
    user = context["request"].user
    if not may_start_runs(user):
        return {"start_form": None}
    return {"start_form": StartRunForm(user), "start_previews": None, "request": context["request"]}
