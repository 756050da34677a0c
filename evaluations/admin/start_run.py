"""The admin's "start a run" actions: on agent versions (governance/admin/versions.py, "Start a
run…") and on dataset versions (evaluations/admin/datasets.py, "Run an agent on it…").

An intermediate page, like the bypass reason's: the person chooses the other side (a dataset
version, or an agent version of an agent they may build) and the repetitions, presses
"Estimate", sees per selected row the calls, USD and what has no price ("price missing"), then
"Start". Each run starts through `StartRun`; a refusal is a message, never a bare 403. Changing
a choice after the estimate estimates again (`StartRunForm.confirmed`).
"""

from django.contrib import messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from evaluations.views.start_run_form import StartRunForm, may_start_runs
from sherlock.core.admin import message_as_written
from sherlock.core.errors import ActionError


class StartRunPermission:
    """`has_start_run_permission(request)`: shows the action to those who may start runs of
    some agent (Builder or Admin); `StartRun` still decides row by row."""

    def has_start_run_permission(self, request):
        return may_start_runs(request.user)


def start_run_action(modeladmin, request, queryset, *, selected, description):
    """The intermediate page for the selected rows, which are the `selected` side
    ("agent_version" or "dataset_version") of the runs to start."""
    other = "dataset_version" if selected == "agent_version" else "agent_version"
    objects = list(queryset)
    posted = "estimate" in request.POST or "apply" in request.POST
    form = StartRunForm(request.user, request.POST if posted else None, fixed=[selected])
    previews = None
    if posted and form.is_valid():
        chosen = form.cleaned_data[other]
        pairs = [(obj, chosen) if selected == "agent_version" else (chosen, obj) for obj in objects]
        if "apply" in request.POST and form.confirmed(pairs):
            for agent_version, dataset_version in pairs:
                _start(modeladmin, request, form.action(agent_version, dataset_version))
            return None
        previews = form.previews(pairs)
    return TemplateResponse(
        request,
        "admin/evaluations/start_run.html",
        {
            **modeladmin.admin_site.each_context(request),
            "title": description,
            "form": form,
            "objects": objects,
            "previews": previews,
            "may_apply": bool(previews) and any(p["refusal"] is None for p in previews or []),
            "action": request.POST.get("action"),
            "opts": modeladmin.model._meta,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        },
    )


def _start(modeladmin, request, action):
    label = f"{action.agent_version} on {action.dataset_version}"
    try:
        run = action.execute()
    except ActionError as exc:
        message_as_written(modeladmin, request, f"{label}: {exc}", messages.ERROR)
        return
    message_as_written(
        modeladmin,
        request,
        format_html(
            '{}: <a href="{}">run #{}</a> started.',
            label,
            reverse("evaluations:run-detail", args=[run.pk]),
            run.pk,
        ),
        messages.SUCCESS,
    )
