"""The form that names a role and where it holds, for the People pages and the admin's Roles
page alike (both hand it to GrantRole/RevokeRole, which decide who may).

The agent and the dataset are picked with the admin's autocomplete (issue 24): a name typed
and chosen from `/admin/autocomplete/` (the agents or datasets the person may see, searched by
slug or name, twenty at a time), never a list of every agent on the page. The pages that use
the form include ``{{ form.media }}``; the widget posts the chosen row's id.
"""

from django import forms
from django.contrib import admin
from django.contrib.admin.widgets import AutocompleteSelect

from agents.models import Agent
from evaluations.models import Dataset
from governance.choices import Role
from governance.models import RoleGrant


def scope_picker(name):
    """The admin's autocomplete for `RoleGrant.<name>` (an agent or a dataset)."""
    return AutocompleteSelect(RoleGrant._meta.get_field(name), admin.site)


class ScopeForm(forms.Form):
    """A role and where it holds: everywhere, or one agent or one dataset."""

    role = forms.ChoiceField(choices=Role.choices)
    agent = forms.ModelChoiceField(
        Agent.objects.all(),
        required=False,
        label="only agent",
        widget=scope_picker("agent"),
        help_text="Only this agent: type its slug or name.",
    )
    dataset = forms.ModelChoiceField(
        Dataset.objects.all(),
        required=False,
        label="only dataset",
        widget=scope_picker("dataset"),
        help_text="Only this dataset: type its slug or name.",
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
