"""The schedules page (`/schedules/`, issue 13 point 4): schedules, their last and next run,
and a form to add one that shows the cost per run and per month before saving.

The form posts "estimate" first (`evaluations.schedules.estimate_schedule` with the versions the
schedule would run now) and "save" only with the same choices (the posted `estimated` key, as the
start form does), so nobody puts a large set on a frequent schedule without seeing its price.
Pause, resume and delete are buttons on each row. Every change goes through the schedule verbs;
a refusal is a message on the page.
"""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from agents.models import Agent, AgentVersion
from evaluations.actions.create_schedule import CreateSchedule
from evaluations.actions.delete_schedule import DeleteSchedule
from evaluations.actions.pause_schedule import PauseSchedule
from evaluations.actions.schedule_fields import (
    PLAN_FIELDS,
    may_schedule,
    may_schedule_any,
    validate,
)
from evaluations.models import Dataset, DatasetVersion, RunSchedule
from evaluations.schedules import estimate_schedule
from sherlock.core.errors import ActionError, ActionInvalid
from sherlock.core.hidden import visible_or_404
from sherlock.core.htmx import render_page

VERBS = ("pause", "resume", "delete")
PAST = {"pause": "paused", "resume": "resumed", "delete": "deleted"}


class ScheduleForm(forms.Form):
    agent = forms.ModelChoiceField(Agent.objects.none())
    agent_version = forms.ModelChoiceField(
        AgentVersion.objects.none(), required=False, empty_label="its live version"
    )
    dataset = forms.ModelChoiceField(Dataset.objects.none())
    dataset_version = forms.ModelChoiceField(
        DatasetVersion.objects.none(), required=False, empty_label="its latest frozen version"
    )
    repetitions = forms.IntegerField(min_value=1, max_value=100, initial=1)
    cron = forms.CharField(required=False, help_text='UTC, e.g. "0 6 * * 1-5"', max_length=100)
    interval_minutes = forms.IntegerField(required=False, min_value=1, label="or every (minutes)")

    def __init__(self, user, *args, **kwargs):
        super().__init__(*args, **kwargs)
        agents = Agent.objects.for_user(user).order_by("slug")
        datasets = Dataset.objects.for_user(user).order_by("slug")
        self.fields["agent"].queryset = agents
        self.fields["dataset"].queryset = datasets
        self.fields["agent_version"].queryset = (
            AgentVersion.objects.filter(agent__in=agents)
            .select_related("agent")
            .order_by("agent__slug", "-number")
        )
        self.fields["dataset_version"].queryset = (
            DatasetVersion.objects.filter(dataset__in=datasets, frozen_at__isnull=False)
            .select_related("dataset")
            .order_by("dataset__slug", "-number")
        )

    def key(self):
        data = self.cleaned_data
        return ":".join(str(getattr(data[name], "pk", data[name]) or "") for name in PLAN_FIELDS)

    def estimate(self):
        """The estimate of the schedule as chosen, or raise ActionInvalid saying why not."""
        data = self.cleaned_data
        draft = RunSchedule(**{name: data[name] for name in PLAN_FIELDS})
        draft.cron = data["cron"] or ""
        validate(draft)  # the timing CreateSchedule would refuse, before it is estimated
        agent_version, dataset_version = draft.resolve()
        if agent_version is None:
            raise ActionInvalid(f"{data['agent']} has no live version: pin one", field="agent")
        if dataset_version is None:
            raise ActionInvalid(f"{data['dataset']} has no frozen version", field="dataset")
        return estimate_schedule(
            agent_version,
            dataset_version,
            data["repetitions"],
            draft.cron,
            data["interval_minutes"],
        )


def _schedules(user):
    return (
        RunSchedule.objects.for_user(user)
        .select_related(
            "agent", "agent_version", "dataset", "dataset_version", "created_by", "q_schedule"
        )
        .select_related("last_run")
        .order_by("-created_at", "-pk")
    )


@login_required
def schedules(request):
    user = request.user
    form = ScheduleForm(user, request.POST if request.method == "POST" else None)
    context = {
        "form": form,
        "estimate": None,
        "estimated_key": "",
        "may_create": may_schedule_any(user),
    }
    if form.is_bound and form.is_valid():
        try:
            if "save" in request.POST and request.POST.get("estimated") == form.key():
                fields = {name: form.cleaned_data[name] for name in PLAN_FIELDS}
                fields["cron"] = fields["cron"] or ""
                CreateSchedule(acting_user=user, **fields).execute()
                messages.success(request, "Schedule saved.")
                return redirect("evaluations:schedules")
            context["estimate"] = form.estimate()
            context["estimated_key"] = form.key()
        except ActionError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
    context["schedules"] = [
        {"schedule": s, "may_change": may_schedule(user, s.agent, s.dataset)}
        for s in _schedules(user)
    ]
    return render_page(request, "evaluations/schedules.html", context)


@login_required
@require_POST
def schedule_change(request, pk, verb):
    """Pause, resume or delete one schedule (buttons of the list)."""
    if verb not in VERBS:
        raise Http404(verb)
    schedule = visible_or_404(request, _schedules(request.user), pk=pk)
    try:
        if verb == "delete":
            DeleteSchedule(acting_user=request.user, schedule=schedule).execute()
        else:
            PauseSchedule(
                acting_user=request.user, schedule=schedule, active=verb == "resume"
            ).execute()
    except ActionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Schedule #{pk}: {PAST[verb]}.")
    return redirect("evaluations:schedules")
