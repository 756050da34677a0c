"""The form that names a role and where it holds, for the People pages and the admin's Roles
page alike (both hand it to GrantRole/RevokeRole, which decide who may)."""

from django import forms

from agents.models import Agent
from evaluations.models import Dataset
from governance.choices import Role


class ScopeForm(forms.Form):
    """A role and where it holds: everywhere, or one agent or one dataset (by slug)."""

    role = forms.ChoiceField(choices=Role.choices)
    agent = forms.ModelChoiceField(
        Agent.objects.all(), required=False, to_field_name="slug", help_text="Only this agent."
    )
    dataset = forms.ModelChoiceField(
        Dataset.objects.all(), required=False, to_field_name="slug", help_text="Only this dataset."
    )

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("agent") and cleaned.get("dataset"):
            raise forms.ValidationError("Choose an agent or a dataset, not both.")
        return cleaned

    @property
    def scope(self):
        return self.cleaned_data.get("agent") or self.cleaned_data.get("dataset")


class RoleForm(ScopeForm):
    """A grant or a revoke: the scope and the reason the audit entry keeps."""

    reason = forms.CharField(required=False, max_length=2000)
