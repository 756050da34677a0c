"""Starting a run from the pages: the run list's "Start a run" form.

`GET /runs/start/` is the form on a page of its own, open; the run list shows the same partial
(`{% start_run_form %}`, evaluations/templatetags/runs.py) to whoever may start runs, folded
away in a disclosure until it is used.
`POST /runs/start/` with "estimate" shows the estimate of the choices (calls, USD, "price
missing (N calls)"); with "confirm" it starts the run through `StartRun` and goes to the run's
page, but only when the choices are those whose estimate was shown (`StartRunForm.confirmed`),
else it estimates again. A refusal is a message on the form. htmx swaps the partial in place;
without JavaScript the same view answers a full page.
"""

from typing import Any

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from evaluations.actions.schedule_fields import may_schedule_any
from evaluations.views.start_run_form import StartRunForm, may_start_runs
from sherlock.core.errors import ActionError
from sherlock.core.forms import show_refusal
from sherlock.core.htmx import render_page

PARTIAL = "evaluations/partials/start_run.html"


@login_required
def start_run(request):
    if not may_start_runs(request.user):
        refused = "You may not start runs (Builder role on an agent needed)."
        if may_schedule_any(request.user):  # an Editor of a dataset: its runs are scheduled
            refused += " As an Editor you may schedule runs of your datasets under Schedules."
        return render_page(
            request, "evaluations/start_run.html", {"start_refused": refused}, partial=PARTIAL
        )
    form = StartRunForm(request.user, request.POST if request.method == "POST" else None)
    # On a page of its own the form is the page: open, under the page's own heading (its
    # summary does not say "Start a run" again). The run list folds it away.
    on_page = not getattr(request, "htmx", False)
    context: dict[str, Any] = {
        "start_form": form,
        "start_previews": None,
        "start_open": True,
        "start_page": on_page,
    }
    if form.is_bound and form.is_valid():
        pair = (form.cleaned_data["agent_version"], form.cleaned_data["dataset_version"])
        if "confirm" in request.POST and form.confirmed([pair]):
            try:
                run = form.action(*pair).execute()
            except ActionError as exc:
                show_refusal(form, exc)
            else:
                url = reverse("evaluations:run-detail", args=[run.pk])
                if getattr(request, "htmx", False):
                    return HttpResponseClientRedirect(url)
                return redirect(url)
        else:
            context["start_previews"] = form.previews([pair])
    return render_page(request, "evaluations/start_run.html", context, partial=PARTIAL)
