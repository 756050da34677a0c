"""What the evaluations admin pages share: the datasets a user may see, and refusals shown on
the form with the input kept (`RefusalsMixin`, `DatasetScopedMixin`), never as a bare 403."""

from typing import Any

from django import forms
from django.contrib import messages
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.shortcuts import redirect
from django.urls import reverse

from evaluations.admin.forms import CHECKS_DOC_URL
from evaluations.models import (
    CaseVersion,
    Check,
    Dataset,
)
from sherlock.core.admin import (
    AuditsHiddenObjects,
    any_visible,
)
from sherlock.core.errors import ActionDenied, ActionError
from sherlock.core.forms import show_refusal
from sherlock.core.permissions import user_can, within


def visible_datasets(request):
    return Dataset.objects.for_user(request.user, "view")


def with_counts(versions):
    """Dataset versions annotated with `n_cases` and `n_checks`, each counted in a subquery of
    its own: one join of a version's cases and checks would count through their product
    (10,000 cases x 4 checks: 40,000 rows a version)."""

    def count(model):
        rows = model.objects.filter(dataset_version=OuterRef("pk")).order_by()
        return Coalesce(
            Subquery(rows.values("dataset_version").annotate(n=Count("pk")).values("n")), 0
        )

    return versions.annotate(n_cases=count(CaseVersion), n_checks=count(Check))


class Refused(Exception):
    """An action refused a save or delete made through an admin form: carried out of the
    admin's transaction (so it rolls back) to `RefusalsMixin`, which shows it."""

    def __init__(self, error, action=None):
        super().__init__(str(error))
        self.error = error
        self.action = action

    def record(self):
        """Write the refusal entry again: the action wrote it inside the admin's transaction,
        which the refusal has just rolled back."""
        if self.action is not None and isinstance(self.error, ActionDenied):
            self.action.audit_refusal(self.error)


class RefusalsMixin(AuditsHiddenObjects):
    """A refusal of an action is a message on the form, never a bare 403.

    Django's admin validates the form, then calls `save_model` inside its transaction, where a
    form can no longer be given errors. So `save_model` raises `Refused`, which rolls the
    transaction back, and `changeform_view` renders the same POST again with the refusal handed
    to the form: its `clean()` puts the message on the field it names (`show_refusal`) or above
    the form, and the page shows the person's input as they typed it. A change or delete posted
    for a row the user may not see is audited (`AuditsHiddenObjects`)."""

    def get_form(self, request, obj=None, change=False, **kwargs):
        form_class: Any = super().get_form(request, obj, change=change, **kwargs)
        refusal = getattr(request, "_sherlock_refusal", None)

        class RefusableForm(form_class):
            user = request.user

            def clean(self):
                super().clean()
                cleaned = self.cleaned_data
                if refusal is not None:
                    aliases: dict[str, Any] = getattr(self, "refusal_aliases", dict)()
                    show_refusal(self, refusal, aliases=aliases)
                return cleaned

        RefusableForm.__name__ = form_class.__name__
        return RefusableForm

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except Refused as refused:
            refused.record()
            request._sherlock_refusal = refused.error
            return super().changeform_view(request, object_id, form_url, extra_context)

    def delete_view(self, request, object_id, extra_context=None):
        """A delete the action refuses (`delete_model` raised `Refused`) is a message on the
        row's page, not a 500."""
        try:
            return super().delete_view(request, object_id, extra_context)
        except Refused as refused:
            refused.record()
            self.message_user(request, str(refused.error), messages.ERROR)
            opts = self.model._meta
            return redirect(
                reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[object_id])
            )

    def run_action(self, request, action):
        try:
            return action.execute()
        except ActionError as exc:
            raise Refused(exc, action) from exc


class DatasetScopedMixin(RefusalsMixin):
    """Dataset-side admin: changelists show what the user may see; changing needs the Editor
    verb on that very dataset (global or object grant) and a draft version; every write goes
    through the evaluations actions, so admin edits are validated and audited like API ones.

    A frozen version's rows open read-only, with a banner that says so. A POST is still handed
    to the action when the version is frozen: a version frozen while the form was open is then
    refused by the action ("This dataset version is frozen"), on the form with the input kept,
    instead of a bare 403 that loses it."""

    # The actions that write a row: each admin names its own.
    def create_action(self, request, data, fields):
        raise NotImplementedError

    def update_action(self, request, obj, changes):
        raise NotImplementedError

    def delete_action(self, request, obj):
        raise NotImplementedError

    def dataset_of(self, obj):
        return obj.dataset_version.dataset

    def version_of(self, obj):
        return obj.dataset_version

    def may_edit(self, request, obj):
        if obj is None:
            return request.user.has_perm("evaluations.edit_dataset") or (
                any_visible(request, Dataset, "edit")
            )
        return user_can(request.user, "edit", self.dataset_of(obj)) and (
            request.method == "POST" or not self.version_of(obj).is_frozen
        )

    def has_view_permission(self, request, obj=None):
        if obj is None:
            return any_visible(request, Dataset)
        return user_can(request.user, "view", self.dataset_of(obj))

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_add_permission(self, request, obj=None):
        return self.may_edit(request, None)

    def has_change_permission(self, request, obj=None):
        return self.may_edit(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self.may_edit(request, obj)

    def get_queryset(self, request):
        datasets = visible_datasets(request)
        return within(super().get_queryset(request), "dataset_version__dataset", datasets)

    def get_actions(self, request):
        # Django's bulk delete would delete rows without the actions (no audit, no frozen
        # check): the remove action below goes through them, one row at a time.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is not None and not self.has_change_permission(request, obj):
            kwargs["form"] = forms.ModelForm  # read-only page: the model's fields, shown
        return super().get_form(request, obj, change=change, **kwargs)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        version = self.version_of(obj) if obj is not None else None
        frozen = version if version is not None and version.is_frozen else None
        context["frozen_version"] = frozen
        if frozen is not None:  # the banner links the draft to edit instead, when there is one
            context["frozen_draft"] = frozen.dataset.versions.filter(frozen_at__isnull=True).first()
        context["checks_doc_url"] = CHECKS_DOC_URL
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request, obj, form, change):
        fields = form.action_fields()
        if change:
            stored = type(obj).objects.get(pk=obj.pk)
            changes = {k: v for k, v in fields.items() if getattr(stored, k) != v}
            action = self.update_action(request, stored, changes)
        else:
            action = self.create_action(request, form.cleaned_data, fields)
        saved = self.run_action(request, action)
        for field in saved._meta.concrete_fields:  # what the admin's messages and log read
            setattr(obj, field.attname, getattr(saved, field.attname))

    def delete_model(self, request, obj):
        self.run_action(request, self.delete_action(request, obj))

    def response_post_save_add(self, request, obj):
        return self._back_to_version(obj)

    def response_post_save_change(self, request, obj):
        return self._back_to_version(obj)

    def _back_to_version(self, obj):
        # "Save" on a case or a check returns to the draft it belongs to, where the person was
        # working, not to the list of every case of every dataset. "Save and
        # continue" and "Save and add another" keep Django's own answers.
        return redirect(
            reverse("admin:evaluations_datasetversion_change", args=[obj.dataset_version_id])
        )

    def delete_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, object_id)
        back = ""
        if obj is not None:
            back = reverse(
                f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk]
            )
        if (
            obj is not None
            and not self.has_delete_permission(request, obj)
            and self.has_view_permission(request, obj)
        ):
            # A person who may see the row learns why it cannot go, on its page.
            self.message_user(request, self.why_not_editable(request, obj), messages.ERROR)
            return redirect(back)
        return super().delete_view(request, object_id, extra_context)

    def why_not_editable(self, request, obj):
        if not user_can(request.user, "edit", self.dataset_of(obj)):
            return "You may not edit this dataset (Editor role needed)."
        return "This dataset version is frozen; edit the draft version instead."
