"""Admin for run schedules: created, changed, paused and deleted through the schedule actions."""

from django import forms
from django.contrib import admin

from agents.models import Agent
from evaluations.actions.create_schedule import CreateSchedule
from evaluations.actions.delete_schedule import DeleteSchedule
from evaluations.actions.fire_schedule import estimate_schedule
from evaluations.actions.pause_schedule import PauseSchedule, ResumeSchedule
from evaluations.actions.schedule_fields import SCHEDULE_FIELDS, may_schedule
from evaluations.actions.update_schedule import UpdateSchedule
from evaluations.admin.base import RefusalsMixin
from evaluations.models import (
    Dataset,
    RunSchedule,
)
from sherlock.core.admin import (
    any_row,
    any_visible,
    verb_action,
)
from sherlock.core.permissions import user_can


class ScheduleAdminForm(forms.ModelForm):
    confirm_cost = forms.BooleanField(
        required=False,
        label="Confirm the monthly cost",
        help_text="Needed when the schedule's month passes SHERLOCK_SCHEDULE_CONFIRM_MONTHLY_USD "
        "(the estimate is shown once saved, and on the /schedules/ page before).",
    )

    class Meta:
        model = RunSchedule
        fields = SCHEDULE_FIELDS


@admin.register(RunSchedule)
class RunScheduleAdmin(RefusalsMixin, admin.ModelAdmin):
    """Schedules, written through the schedule verbs (an Editor of the dataset or a Builder of
    the agent; audited; the django-q2 row in the same transaction). A refusal is a message on
    the form. The change page shows the estimate per run and per month, and the last and next
    run; the `/schedules/` page shows the estimate before saving."""

    list_display = ("__str__", "timing", "active", "last_run", "last_fired_at", "next_run")
    list_filter = ("active",)
    list_select_related = ("agent", "dataset", "q_schedule", "last_run")
    form = ScheduleAdminForm
    fields = (
        *SCHEDULE_FIELDS,
        "confirm_cost",
        "created_by",
        "last_run",
        "last_fired_at",
        "last_error",
        "next_run",
        "estimate",
    )
    readonly_fields = (
        "created_by",
        "last_run",
        "last_fired_at",
        "last_error",
        "next_run",
        "estimate",
    )
    autocomplete_fields = ("agent", "agent_version", "dataset", "dataset_version")
    actions = ["pause_selected", "resume_selected"]
    pause_selected = verb_action(
        PauseSchedule, "paused", description="Pause the selected schedules", subject="schedule"
    )
    resume_selected = verb_action(
        ResumeSchedule, "resumed", description="Resume the selected schedules", subject="schedule"
    )

    def get_queryset(self, request):
        return super().get_queryset(request).filter(agent__in=Agent.objects.for_user(request.user))

    def _may_some(self, request):
        return any_visible(request, Agent, "build") or any_visible(request, Dataset, "edit")

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_view_permission(self, request, obj=None):
        if obj is None:
            rows = lambda: self.get_queryset(request)  # noqa: E731 - asked once per request
            return self._may_some(request) or any_row(request, (type(self), "rows"), rows)
        return user_can(request.user, "view", obj.agent)

    def has_add_permission(self, request):
        return self._may_some(request)

    def has_change_permission(self, request, obj=None):
        if obj is None:
            return self._may_some(request)
        return may_schedule(request.user, obj.agent, obj.dataset)

    def has_delete_permission(self, request, obj=None):
        return self.has_change_permission(request, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # deletes go through DeleteSchedule, one by one
        return actions

    @admin.display(description="when")
    def timing(self, obj):
        return obj.cron or f"every {obj.interval_minutes} min"

    @admin.display(description="estimate (per run / per month)")
    def estimate(self, obj):
        if obj is None or obj.pk is None:
            return "shown once saved (the /schedules/ page shows it before saving)"
        agent_version, dataset_version = obj.resolve()
        if agent_version is None or dataset_version is None:
            return "no live agent version or no frozen dataset version"
        estimate = estimate_schedule(
            agent_version, dataset_version, obj.repetitions, obj.cron, obj.interval_minutes
        )
        return (
            f"{estimate['per_run_text']} per run x {estimate['runs_per_month']} runs = "
            f"{estimate['per_month_text']} per 30 days"
        )

    def save_model(self, request, obj, form, change):
        fields = {name: form.cleaned_data.get(name) for name in SCHEDULE_FIELDS}
        fields["cron"] = fields["cron"] or ""
        confirm = form.cleaned_data.get("confirm_cost", False)
        action: UpdateSchedule | CreateSchedule
        if change:
            stored = RunSchedule.objects.get(pk=obj.pk)
            changes = {
                k: v
                for k, v in fields.items()
                if k not in ("agent", "dataset") and getattr(stored, k) != v
            }
            action = UpdateSchedule(
                acting_user=request.user, schedule=stored, confirm_cost=confirm, **changes
            )
        else:
            action = CreateSchedule(acting_user=request.user, confirm_cost=confirm, **fields)
        saved = self.run_action(request, action)
        for field in saved._meta.concrete_fields:
            setattr(obj, field.attname, getattr(saved, field.attname))

    def delete_model(self, request, obj):
        self.run_action(request, DeleteSchedule(acting_user=request.user, schedule=obj))
