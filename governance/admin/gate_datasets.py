"""Gate datasets: which datasets gate each agent's releases, chosen per agent by an Admin.

Adding a row chooses one more dataset for an agent and deleting one drops it, both through
`SetGateDatasets` (audited as `governance.gate_datasets.set`). The publish page's refusal for an
agent without any links here, with the agent filled in (`?agent=<id>`).
"""

from django.contrib import admin, messages

from agents.models import Agent
from evaluations.models import Dataset
from governance.actions.set_gate_datasets import SetGateDatasets
from governance.admin.base import ActionForm
from governance.models import GateDataset
from sherlock.core.admin import global_admin
from sherlock.core.errors import ActionError
from sherlock.core.forms import with_acting_user
from sherlock.core.permissions import within


def _chosen(agent):
    return list(
        Dataset.objects.filter(pk__in=GateDataset.objects.filter(agent=agent).values("dataset_id"))
    )


class GateDatasetForm(ActionForm):
    class Meta:
        model = GateDataset
        fields = ["agent", "dataset"]
        help_texts = {
            "dataset": "A dataset written for this agent's task: its latest frozen version is "
            "what a publish request of the agent runs (with the policy's repetitions).",
        }

    def make_action(self, user):
        agent = self.cleaned_data["agent"]
        return SetGateDatasets(
            acting_user=user, agent=agent, datasets=[*_chosen(agent), self.cleaned_data["dataset"]]
        )


@admin.register(GateDataset)
class GateDatasetAdmin(admin.ModelAdmin):
    form = GateDatasetForm
    list_display = ["agent", "dataset", "chosen_by", "chosen_at"]
    list_select_related = ["agent", "dataset", "chosen_by"]
    list_filter = [("agent", admin.RelatedOnlyFieldListFilter)]  # the agents listed, no other
    autocomplete_fields = ["agent", "dataset"]
    readonly_fields = ["chosen_by", "chosen_at"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        return with_acting_user(
            super().get_form(request, obj, change=change, **kwargs), request.user
        )

    def get_queryset(self, request):
        """The choices of the agents the user may see, on datasets they may see: a gate
        dataset they may not open is named nowhere (as in the API's `hidden` count)."""
        rows = within(super().get_queryset(request), "agent", Agent.objects.for_user(request.user))
        return within(rows, "dataset", Dataset.objects.for_user(request.user))

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff

    def has_add_permission(self, request):
        return global_admin(request)

    def has_change_permission(self, request, obj=None):
        return False  # a choice is added or dropped, not edited

    def has_delete_permission(self, request, obj=None):
        return global_admin(request)

    def save_model(self, request, obj, form, change):
        form.make_action(request.user).execute()
        # The form never fills the instance (ActionForm): the row is the action's.
        found = GateDataset.objects.get(
            agent=form.cleaned_data["agent"], dataset=form.cleaned_data["dataset"]
        )
        for field in found._meta.concrete_fields:  # what the admin's message and log read
            setattr(obj, field.attname, getattr(found, field.attname))

    def delete_model(self, request, obj):
        self.delete_queryset(request, GateDataset.objects.filter(pk=obj.pk))

    def delete_queryset(self, request, queryset):
        for agent_id in sorted(set(queryset.values_list("agent_id", flat=True))):
            rows = GateDataset.objects.filter(agent_id=agent_id).select_related("agent", "dataset")
            dropped = set(queryset.filter(agent_id=agent_id).values_list("dataset_id", flat=True))
            agent = rows[0].agent
            keep = [row.dataset for row in rows if row.dataset_id not in dropped]
            try:
                SetGateDatasets(acting_user=request.user, agent=agent, datasets=keep).execute()
            except ActionError as exc:
                messages.error(request, str(exc))
