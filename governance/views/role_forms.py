"""The form that names a role and where it holds, for the People pages (handed to
GrantRole/RevokeRole, which decide who may).

The agent and the dataset are pickers (sherlock.core.pickers): a name typed and
chosen from `/pick/agent/` or `/pick/dataset/` (the rows the person may see, searched by slug
or name, twenty at a time), never a list of every agent on the page. Sherlock's pages load the
pickers' media in base.html. The widget
posts the chosen row's id.
"""

from django import forms

from agents.models import Agent
from evaluations.models import Dataset
from governance.choices import Role
from sherlock.core.pickers import Picker


class ScopeForm(forms.Form):
    """A role and where it holds: everywhere, or one agent or one dataset."""

    role = forms.ChoiceField(choices=Role.choices)
    agent = forms.ModelChoiceField(
        Agent.objects.all(),
        required=False,
        label="only agent",
        widget=Picker("agent", placeholder="type a slug or name"),
        help_text="Only this agent: type its slug or name.",
    )
    dataset = forms.ModelChoiceField(
        Dataset.objects.all(),
        required=False,
        label="only dataset",
        widget=Picker("dataset", placeholder="type a slug or name"),
        help_text="Only this dataset: type its slug or name.",
    )

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        if cleaned.get("agent") and cleaned.get("dataset"):
            raise forms.ValidationError("Choose an agent or a dataset, not both.")
        return cleaned

    @property
    def scope(self):
        return self.cleaned_data.get("agent") or self.cleaned_data.get("dataset")


class RoleForm(ScopeForm):
    """A grant or a revoke: the scope and the reason the audit entry keeps."""

    reason = forms.CharField(required=False, max_length=2000)
