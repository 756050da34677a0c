"""Policies: created and changed (a new version each time) by the policy actions."""

from django.contrib import admin

from governance.actions.create_policy import CreatePolicy
from governance.actions.policy_fields import POLICY_FIELDS
from governance.actions.update_policy import UpdatePolicy
from governance.admin.base import ActionForm
from governance.models import (
    PublishingPolicy,
)
from sherlock.core.admin import global_admin
from sherlock.core.forms import with_acting_user


class PolicyForm(ActionForm):
    """The policy actions write the next version (or version 1 of a new scope); a refusal is
    shown on its field, or above the form when it names none ("Nothing changed.")."""

    class Meta:
        model = PublishingPolicy
        fields = ["agent", *POLICY_FIELDS, "gate_datasets"]

    checks_partial = True  # every field is read with `in cleaned_data`

    def clean_corrected_checks(self):
        # A JSON box left empty means no check, as the field's default says, not null.
        value = self.cleaned_data.get("corrected_checks")
        return {} if value in (None, "") else value

    def make_action(self, user):
        fields = {
            name: self.cleaned_data[name] for name in POLICY_FIELDS if name in self.cleaned_data
        }
        datasets = list(self.cleaned_data.get("gate_datasets") or [])
        if self.instance.pk is None:
            return CreatePolicy(
                acting_user=user,
                agent=self.cleaned_data.get("agent"),
                gate_datasets=datasets,
                **fields,
            )
        original = PublishingPolicy.objects.get(pk=self.instance.pk)
        return UpdatePolicy(
            acting_user=user, policy=original, changes=fields, gate_datasets=datasets
        )


@admin.register(PublishingPolicy)
class PublishingPolicyAdmin(admin.ModelAdmin):
    """Saving writes version 1 (new scope) or the next version (an existing one) through the
    policy actions; older versions are shown read-only, as the decisions that used them."""

    form = PolicyForm
    list_display = ["name", "scope", "version", "enforcement", "min_case_pass_rate"]
    list_select_related = ["agent"]
    list_filter = ["enforcement", ("agent", admin.RelatedOnlyFieldListFilter)]
    readonly_fields = ["scope_key", "version", "created_by", "created_at"]
    # Typed and picked (the datasets the person may see, by slug or name), never every dataset
    # in two boxes.
    autocomplete_fields = ["agent", "gate_datasets"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        return with_acting_user(
            super().get_form(request, obj, change=change, **kwargs), request.user
        )

    @admin.display(description="scope", ordering="scope_key")
    def scope(self, obj):
        return obj.scope_text

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "agent"] if obj is not None else self.readonly_fields

    def has_add_permission(self, request):
        return global_admin(request)

    def has_change_permission(self, request, obj=None):
        if not global_admin(request):
            return False
        return obj is None or PublishingPolicy.objects.current(obj.scope_key).pk == obj.pk

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        saved = form.make_action(request.user).execute()
        obj.pk, obj.version, obj.scope_key = saved.pk, saved.version, saved.scope_key
        obj.name = saved.name  # the "was added" message names it

    def save_related(self, request, form, formsets, change):
        """The action already set the gate datasets on the row it wrote."""
