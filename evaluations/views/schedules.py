"""The schedules page (`/schedules/`): schedules, their last and next run,
and a form to add one that shows the cost per run and per month before saving.

The form posts "estimate" first (`evaluations.actions.fire_schedule.estimate_schedule` with the
versions the schedule would run now) and "save" only with the same choices (the posted `estimated`
key, as the start form does), so nobody puts a large set on a frequent schedule without seeing its
price. Pause, resume and delete are buttons on each row. Every change goes through the schedule
verbs; a refusal is a message on the page.
"""

from decimal import Decimal

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from agents.models import Agent, AgentVersion
from evaluations.actions.create_schedule import CreateSchedule
from evaluations.actions.delete_schedule import DeleteSchedule
from evaluations.actions.fire_schedule import estimate_schedule
from evaluations.actions.pause_schedule import set_schedule_active
from evaluations.actions.schedule_fields import (
    PLAN_FIELDS,
    confirm_limit,
    may_schedule,
    may_schedule_any,
    schedule_errors,
    validate,
)
from evaluations.costs.texts import format_usd
from evaluations.models import Dataset, DatasetVersion, RunSchedule
from evaluations.reads.run_rights import dataset_versions_to_run, datasets_to_run
from sherlock.core.errors import ActionError, ActionInvalid
from sherlock.core.forms import offer, show_refusal
from sherlock.core.hidden import visible_or_404
from sherlock.core.htmx import render_page
from sherlock.core.pickers import Picker

VERBS = ("pause", "resume", "delete")
PAST = {"pause": "paused", "resume": "resumed", "delete": "deleted"}


class ScheduleForm(forms.Form):
    # Typed and picked (/pick/), never every agent, dataset and version listed; a version's
    # picker lists the chosen agent's or dataset's and is cleared when that changes.
    agent = forms.ModelChoiceField(
        Agent.objects.none(), widget=Picker("agent", placeholder="type a slug or name")
    )
    agent_version = forms.ModelChoiceField(
        AgentVersion.objects.none(),
        required=False,
        widget=Picker(
            "agent-version",
            depends=["agent"],
            first="Choose the agent first (left empty: its live version).",
            placeholder="its live version",
        ),
    )
    dataset = forms.ModelChoiceField(
        Dataset.objects.none(), widget=Picker("dataset-to-run", placeholder="type a slug or name")
    )
    dataset_version = forms.ModelChoiceField(
        DatasetVersion.objects.none(),
        required=False,
        widget=Picker(
            "dataset-version-to-run",
            params={"state": "frozen"},
            depends=["dataset"],
            first="Choose the dataset first (left empty: its latest frozen version).",
            placeholder="its latest frozen version",
        ),
    )
    repetitions = forms.IntegerField(min_value=1, max_value=100, initial=1)
    cron = forms.CharField(required=False, help_text='UTC, e.g. "0 6 * * 1-5"', max_length=100)
    interval_minutes = forms.IntegerField(required=False, min_value=1, label="or every (minutes)")
    confirm_cost = forms.BooleanField(
        required=False,
        label="I confirm this monthly cost",
        help_text="Needed when the month passes SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD.",
    )

    def __init__(self, user, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # What the pickers offer is what the form accepts: the same scoped querysets.
        offer(self, "agent", Agent.objects.for_user(user))
        offer(self, "dataset", datasets_to_run(user))
        offer(self, "agent_version", AgentVersion.objects.for_user(user).select_related("agent"))
        offer(
            self, "dataset_version", dataset_versions_to_run(user).filter(frozen_at__isnull=False)
        )

    def clean(self):
        """Every error at once: the fields' own, then each reason the schedule verbs
        would refuse the timing or the versions (`schedule_errors`) on a field that has none
        yet, and a pair that resolves to no version: one submit shows them all."""
        super().clean()
        cleaned = self.cleaned_data
        draft = RunSchedule(
            **{name: cleaned.get(name) for name in PLAN_FIELDS if name not in self.errors}
        )
        draft.cron = cleaned.get("cron") or ""
        for error in schedule_errors(draft):
            if error.field not in self.errors:
                self.add_error(error.field, str(error))
        agent, dataset = cleaned.get("agent"), cleaned.get("dataset")
        if self._unpinned("agent_version") and agent and agent.live_version_id is None:
            self.add_error("agent", f"{agent} has no live version: pin one")
        if self._unpinned("dataset_version") and dataset and dataset.latest_frozen is None:
            self.add_error("dataset", f"{dataset} has no frozen version")
        return cleaned

    def _unpinned(self, name):
        return name not in self.errors and not self.cleaned_data.get(name)

    def plan_fields(self):
        return [self[name] for name in self.fields if name != "confirm_cost"]

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


def over_limit(estimate):
    """The limit the month of `estimate` passes (SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD, as
    money text), or "": saving then needs the confirmation box ticked."""
    usd = estimate["usd_per_month"]
    if usd is None:
        per_run = estimate["per_run"].get("usd_known") or 0
        usd = Decimal(per_run) * estimate["runs_per_month"]
    limit = confirm_limit()
    return format_usd(limit) if Decimal(usd) > limit else ""


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
                CreateSchedule(
                    acting_user=user, confirm_cost=form.cleaned_data["confirm_cost"], **fields
                ).execute()
                messages.success(request, "Schedule saved.")
                return redirect("evaluations:schedules")
        except ActionError as exc:
            show_refusal(form, exc)
        if all(name in form.cleaned_data for name in PLAN_FIELDS):
            try:
                context["estimate"] = form.estimate()
                context["estimated_key"] = form.key()
            except ActionError as exc:
                show_refusal(form, exc)
    if context["estimate"] is not None:
        context["confirm_over"] = over_limit(context["estimate"])
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
            set_schedule_active(
                acting_user=request.user, schedule=schedule, active=verb == "resume"
            ).execute()
    except ActionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Schedule #{pk}: {PAST[verb]}.")
    return redirect("evaluations:schedules")
