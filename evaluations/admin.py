"""Admin for datasets, checks, runs and their results.

Cases and checks are written here by Editors, in a draft version: the forms are in
`evaluations/admin_forms.py`, every save and delete goes through the case and check actions,
and a refusal is shown on the form with the input kept (`RefusalsMixin`), never as a bare 403.
The check form's preview calls `preview_check`, the code of `POST /api/v1/checks/preview/`.

Runs, trials, check results, case results, judge calls and the cost ledger are records of what
happened: read-only here. A run's page lists its case results; a trial's page its check results.
"""

import json

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q
from django.http import HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from agents.models import Agent
from evaluations.actions._case_fields import CASE_FIELDS
from evaluations.actions._check_fields import CHECK_FIELDS
from evaluations.actions._schedule_fields import may_schedule
from evaluations.actions.cancel_run import CancelRun
from evaluations.actions.create_case import CreateCase
from evaluations.actions.create_check import CreateCheck
from evaluations.actions.create_dataset import DATASET_FIELDS, CreateDataset
from evaluations.actions.create_draft_dataset_version import CreateDraftDatasetVersion
from evaluations.actions.create_schedule import CreateSchedule
from evaluations.actions.delete_check import DeleteCheck
from evaluations.actions.delete_schedule import DeleteSchedule
from evaluations.actions.freeze_dataset_version import FreezeDatasetVersion
from evaluations.actions.pause_schedule import PauseSchedule, ResumeSchedule
from evaluations.actions.remove_case import RemoveCase
from evaluations.actions.update_case import UpdateCase
from evaluations.actions.update_check import UpdateCheck
from evaluations.actions.update_schedule import UpdateSchedule
from evaluations.admin_cases_io import EXPORT_ACTIONS, DatasetCasesIOMixin
from evaluations.admin_docs import docs_view
from evaluations.admin_forms import CHECKS_DOC_URL, CaseVersionForm, CheckForm, add_refusal
from evaluations.admin_start_run import StartRunPermission, start_run_action
from evaluations.api.checks import may_preview, preview_check
from evaluations.choices import TrialStatus
from evaluations.costs import describe_estimate, describe_spend, format_usd
from evaluations.judge.probe import judge_status
from evaluations.models import (
    Case,
    CaseResult,
    CaseVersion,
    Check,
    CheckResult,
    CostEntry,
    Dataset,
    DatasetVersion,
    HumanLabel,
    JudgeCall,
    JudgeProbe,
    ModelPrice,
    Run,
    RunSchedule,
    Trial,
)
from evaluations.schedules import estimate_schedule
from sherlock.core.admin import (
    AuditedEdits,
    AuditsHiddenObjects,
    ReadOnlyInline,
    ReadOnlyMixin,
    message_as_written,
    verb_action,
)
from sherlock.core.errors import ActionDenied, ActionError
from sherlock.core.permissions import user_can

# What a run's __str__ reads: select it with the run, or every row costs queries.
RUN_RELATED = ["run__agent_version__agent", "run__dataset_version__dataset"]


def visible_datasets(request):
    return Dataset.objects.for_user(request.user, "view")


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
    """A refusal of an action is a message on the form, never a bare 403 (issue 11).

    Django's admin validates the form, then calls `save_model` inside its transaction, where a
    form can no longer be given errors. So `save_model` raises `Refused`, which rolls the
    transaction back, and `changeform_view` renders the same POST again with the refusal handed
    to the form: its `clean()` puts the message on the field it names (`add_refusal`) or above
    the form, and the page shows the person's input as they typed it. A change or delete posted
    for a row the user may not see is audited (`AuditsHiddenObjects`)."""

    def get_form(self, request, obj=None, change=False, **kwargs):
        form_class = super().get_form(request, obj, change=change, **kwargs)
        refusal = getattr(request, "_sherlock_refusal", None)

        class RefusableForm(form_class):
            user = request.user

            def clean(self):
                cleaned = super().clean()
                if refusal is not None:
                    aliases = getattr(self, "refusal_aliases", dict)()
                    add_refusal(self, refusal, aliases)
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

    def dataset_of(self, obj):
        return obj.dataset_version.dataset

    def version_of(self, obj):
        return obj.dataset_version

    def may_edit(self, request, obj):
        if obj is None:
            return request.user.has_perm("evaluations.edit_dataset") or (
                Dataset.objects.for_user(request.user, "edit").exists()
            )
        return user_can(request.user, "edit", self.dataset_of(obj)) and (
            request.method == "POST" or not self.version_of(obj).is_frozen
        )

    def has_view_permission(self, request, obj=None):
        if obj is None:
            return visible_datasets(request).exists()
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
        return super().get_queryset(request).filter(dataset_version__dataset__in=datasets)

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

    def delete_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, object_id)
        back = None
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


@admin.register(Dataset)
class DatasetAdmin(DatasetCasesIOMixin, RefusalsMixin, AuditedEdits, admin.ModelAdmin):
    """Creating a dataset goes through `CreateDataset`: its owner is whoever creates it, and
    the creation is audited. Its name and description are plain data, changed in place and
    audited with before and after (`evaluations.dataset.update`, `AuditedEdits`). The
    change page lists the versions and links to importing cases and to comparing versions
    (evaluations/admin_cases_io.py)."""

    list_display = ["slug", "name", "owner", "created_at"]
    search_fields = ["slug", "name"]
    actions = ["start_draft"]
    start_draft = verb_action(
        CreateDraftDatasetVersion,
        lambda dataset, draft: draft_started(dataset, draft),
        description="Start a new draft version (copy of the last frozen one)",
        subject="dataset",
        permission="edit",
    )

    class Media:
        css = {"all": ["evaluations/object_tools.css"]}

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/start-draft/",
                view(self.start_draft_view),
                name="evaluations_dataset_start_draft",
            ),
            *super().get_urls(),
        ]

    def start_draft_view(self, request, object_id):
        """The dataset page's "Start a new draft version" button: the list's action, on this
        dataset. `CreateDraftDatasetVersion` decides (the Editor role, no draft yet) and audits;
        a refusal is a message on the dataset's page, the new draft a link in the message."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        dataset = self._visible(request, object_id, verb="start_draft")
        if dataset is None:
            return self._missing(request)
        try:
            draft = CreateDraftDatasetVersion(acting_user=request.user, dataset=dataset).execute()
        except ActionError as exc:
            message_as_written(self, request, f"{dataset}: {exc}", messages.ERROR)
        else:
            message_as_written(self, request, draft_started(dataset, draft), messages.SUCCESS)
        return redirect("admin:evaluations_dataset_change", dataset.pk)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            start = CreateDraftDatasetVersion(acting_user=request.user, dataset=obj)
            context["may_start_draft"] = start.allowed()
        return super().render_change_form(request, context, add, change, form_url, obj)

    def get_fields(self, request, obj=None):
        return ["slug", "name", "description"] + (["owner", "created_at"] if obj else [])

    def get_readonly_fields(self, request, obj=None):
        return ["slug", "owner", "created_at"] if obj else []

    def get_prepopulated_fields(self, request, obj=None):
        return {} if obj else {"slug": ["name"]}  # a dataset's slug is fixed once it exists

    def get_queryset(self, request):
        return visible_datasets(request).select_related("owner")

    def has_view_permission(self, request, obj=None):
        if obj is None:
            return visible_datasets(request).exists() or super().has_view_permission(request)
        return user_can(request.user, "view", obj)

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_change_permission(self, request, obj=None):
        if obj is None:
            return super().has_change_permission(request)
        return user_can(request.user, "edit", obj)

    def has_edit_permission(self, request):
        return Dataset.objects.for_user(request.user, "edit").exists()

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        fields = {name: form.cleaned_data[name] for name in DATASET_FIELDS}
        saved = self.run_action(request, CreateDataset(acting_user=request.user, **fields))
        obj.pk, obj.owner, obj.created_at = saved.pk, saved.owner, saved.created_at


def draft_started(dataset, draft):
    """The message of a started draft, linking it: where its cases and checks are edited."""
    url = reverse("admin:evaluations_datasetversion_change", args=[draft.pk])
    return format_html(
        '{}: new draft version <a href="{}">v{}</a> started; open it to add and change cases.',
        dataset,
        url,
        draft.number,
    )


class CheckInline(ReadOnlyInline):
    model = Check
    # A version's checks at a glance: every check field but the calibration tuning.
    fields = [name for name in CHECK_FIELDS if name not in ("min_labels", "kappa_floor")]
    readonly_fields = fields


class CaseVersionInline(ReadOnlyInline):
    model = CaseVersion
    # A version's cases at a glance: the long documents are on each case version's page.
    fields = [
        "case",
        *(name for name in CASE_FIELDS if name not in ("expected", "contexts", "outcome_check")),
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("case", "dataset_version")


@admin.register(DatasetVersion)
class DatasetVersionAdmin(AuditsHiddenObjects, StartRunPermission, admin.ModelAdmin):
    """Versions list their cases and checks; a draft's page links to adding a case or a check
    (their own pages, through the actions), a frozen one's says it is read-only. Freeze a
    draft with the admin action; "Run an agent on it…" starts runs (`admin_start_run`)."""

    list_display = ["__str__", "frozen_at", "frozen_by", "n_cases", "n_checks"]
    list_select_related = ["dataset", "frozen_by"]
    fields = ["dataset", "number", "note", "created_at", "frozen_at", "frozen_by"]
    readonly_fields = fields
    inlines = [CheckInline, CaseVersionInline]
    actions = ["freeze", "start_run", *EXPORT_ACTIONS]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .filter(dataset__in=visible_datasets(request))
            .annotate(n_cases=Count("case_versions", distinct=True))
            .annotate(n_checks=Count("checks", distinct=True))
        )

    def has_add_permission(self, request):
        return False  # a draft starts from the dataset's "Start a new draft version" action

    def has_change_permission(self, request, obj=None):
        return False  # nothing here is edited in place: cases and checks have their pages

    def has_delete_permission(self, request, obj=None):
        return False  # versions are history (runs pin them); a draft is emptied case by case

    def has_view_permission(self, request, obj=None):
        if obj is None:
            return visible_datasets(request).exists()
        return user_can(request.user, "view", obj.dataset)

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_edit_permission(self, request):
        return Dataset.objects.for_user(request.user, "edit").exists()

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["may_edit"] = not obj.is_frozen and user_can(request.user, "edit", obj.dataset)
            context["draft"] = obj.dataset.versions.filter(frozen_at__isnull=True).first()
        return super().render_change_form(request, context, add, change, form_url, obj)

    @admin.display(ordering="n_cases")
    def n_cases(self, obj):
        return obj.n_cases

    @admin.display(ordering="n_checks")
    def n_checks(self, obj):
        return obj.n_checks

    @admin.action(description="Run an agent on it…", permissions=["start_run"])
    def start_run(self, request, queryset):
        return start_run_action(
            self, request, queryset, selected="dataset_version", description="Run an agent on it"
        )

    freeze = verb_action(
        FreezeDatasetVersion,
        "frozen",
        description="Freeze the selected draft versions",
        subject="dataset_version",
        permission="edit",
    )


@admin.register(Case)
class CaseAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """A case's stable identity; its content is edited per version (Case versions)."""

    list_display = ["key", "dataset", "created_at"]
    list_select_related = ["dataset"]
    search_fields = ["key"]
    list_filter = ["dataset"]

    def get_queryset(self, request):
        return super().get_queryset(request).filter(dataset__in=visible_datasets(request))

    def has_view_permission(self, request, obj=None):
        if obj is None:
            return visible_datasets(request).exists()
        return user_can(request.user, "view", obj.dataset)

    def has_module_permission(self, request):
        return self.has_view_permission(request)


CASE_FIELDSETS = [
    ("Input", {"fields": ["input_format", "input"]}),
    (
        "Expectations",
        {
            "fields": [
                "expected_output",
                "contexts",
                "expected_tools",
                "expected_table",
                "expected_chart",
                "expected_trajectory",
            ]
        },
    ),
    ("Outcome, tags and overrides", {"fields": ["outcome_check", "tags", "overrides"]}),
]


@admin.register(CaseVersion)
class CaseVersionAdmin(DatasetScopedMixin, admin.ModelAdmin):
    """A case of a version. In a draft, an Editor types its key and content in fields that
    explain themselves (`CaseVersionForm`); `CreateCase`, `UpdateCase` and `RemoveCase` write."""

    form = CaseVersionForm
    list_display = ["__str__", "dataset_version"]
    list_select_related = ["case", "dataset_version__dataset"]
    search_fields = ["case__key"]
    actions = ["remove_selected"]
    remove_selected = verb_action(
        RemoveCase,
        "removed",
        description="Remove the selected cases from their draft",
        subject="case_version",
        permission="delete",
    )

    def add_view(self, request, form_url="", extra_context=None):
        # The page adds a case (to a draft version), whatever the model behind it is called.
        return super().add_view(request, form_url, {"title": "Add case", **(extra_context or {})})

    def get_fieldsets(self, request, obj=None):
        if obj is not None and not self.has_change_permission(request, obj):
            return [(None, {"fields": ["key", "dataset_version", *CASE_FIELDS]})]
        first = ["key"] if obj is not None else ["dataset_version", "key"]
        return [(None, {"fields": first}), *CASE_FIELDSETS]

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and not self.has_change_permission(request, obj):
            return ["key"]
        return []

    @admin.display(description="key")
    def key(self, obj):
        return obj.case.key

    def create_action(self, request, data, fields):
        return CreateCase(
            acting_user=request.user,
            dataset_version=data["dataset_version"],
            key=data["key"],
            **fields,
        )

    def update_action(self, request, obj, changes):
        return UpdateCase(acting_user=request.user, case_version=obj, **changes)

    def delete_action(self, request, obj):
        return RemoveCase(acting_user=request.user, case_version=obj)


@admin.register(Check)
class CheckAdmin(DatasetScopedMixin, admin.ModelAdmin):
    """Checks of a version. The kind is chosen from the registry (grouped, its params described
    under it, `CheckForm`); the custom check has fields for its criterion and anchors; a preview
    scores the check before it is saved (`preview_check`, as `POST /api/v1/checks/preview/`).
    The check actions validate (params against the kind's schema) and audit every change."""

    form = CheckForm
    list_display = ["label", "kind", "threshold", "mode", "dataset_version"]
    list_filter = ["kind", "mode", "requires_calibration"]
    list_select_related = ["dataset_version__dataset"]
    actions = ["delete_checks"]
    delete_checks = verb_action(
        DeleteCheck,
        "deleted",
        description="Delete the selected checks from their draft",
        subject="check",
        permission="delete",
    )

    class Media:
        js = ["vendor/htmx-2.0.11.min.js", "evaluations/check_form.js"]
        css = {"all": ["evaluations/check_form.css"]}

    def get_fieldsets(self, request, obj=None):
        if obj is not None and not self.has_change_permission(request, obj):
            return [(None, {"fields": ["dataset_version", *CHECK_FIELDS]})]
        first = ["label", "kind", "params"]
        return [
            (None, {"fields": first if obj is not None else ["dataset_version", *first]}),
            (
                "Custom check: criterion and anchors",
                {"fields": ["criterion", "anchor_0", "anchor_1"], "classes": ["custom-check"]},
            ),
            ("Scoring", {"fields": ["threshold", "mode", "judge_model", "quality_grader"]}),
            (
                "Calibration against hand labels",
                {"fields": ["requires_calibration", "min_labels", "kappa_floor", "position"]},
            ),
            (
                "Preview before saving (nothing is saved)",
                {"fields": ["preview_case", "preview_transcript"], "classes": ["check-preview"]},
            ),
        ]

    def get_urls(self):
        admin_view = self.admin_site.admin_view
        return [
            path("preview/", admin_view(self.preview_view), name="evaluations_check_preview"),
            path("docs/<slug:name>/", admin_view(self.docs_view), name="evaluations_check_docs"),
            *super().get_urls(),
        ]

    def preview_view(self, request):
        """The check form's preview (htmx): the form's kind and params, scored on the chosen
        case and the pasted transcript by `preview_check`; errors are shown, nothing saved."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        context = {"result": None, "errors": []}
        check = Check.objects.filter(
            pk=request.POST.get("_check") or None,
            dataset_version__dataset__in=visible_datasets(request),
        ).first()
        # The editable form whoever asks (a preview changes nothing): on a saved check, its
        # version's cases are the ones to choose from.
        form = self.get_form(request, None)(request.POST, instance=check or Check())
        form.is_valid()
        wanted = ("kind", "params", "criterion", "anchor_0", "anchor_1", "preview_case")
        context["errors"] = [f"{n}: {e}" for n in wanted for e in form.errors.get(n, [])]
        if not may_preview(request.user):
            context["errors"].append("You may not preview checks (no dataset role).")
        if not context["errors"]:
            try:
                case, transcript = form.preview_input()
                context["result"] = preview_check(
                    form.cleaned_data["kind"],
                    form.kind_params(),
                    case,
                    transcript,
                    form.cleaned_data.get("threshold"),
                )
            except forms.ValidationError as exc:
                context["errors"] += [m for ms in exc.message_dict.values() for m in ms]
            except ActionError as exc:
                context["errors"].append(str(exc))
        if context["result"]:
            context["evidence"] = json.dumps(context["result"]["evidence"], indent=2)
            context["params"] = json.dumps(context["result"]["params"])
        return TemplateResponse(request, "admin/evaluations/check/preview_result.html", context)

    def docs_view(self, request, name):
        """docs/<name>.md of this installation as a page (`evaluations.admin_docs`): the
        formats the case and check forms link to, each link at its section."""
        return docs_view(self, request, name)

    def create_action(self, request, data, fields):
        return CreateCheck(
            acting_user=request.user, dataset_version=data["dataset_version"], **fields
        )

    def update_action(self, request, obj, changes):
        return UpdateCheck(acting_user=request.user, check=obj, **changes)

    def delete_action(self, request, obj):
        return DeleteCheck(acting_user=request.user, check=obj)


class CaseResultInline(ReadOnlyMixin, admin.TabularInline):
    model = CaseResult
    fields = ["case", "passed", "flaky", "repetitions_passed", "repetitions", "checks"]
    readonly_fields = fields
    extra = 0


@admin.register(Run)
class RunAdmin(AuditsHiddenObjects, ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "agent_version",
        "dataset_version",
        "status",
        "purpose",
        "progress",
        "trials_error",
        "spend",
        "created_at",
    ]
    list_filter = ["status", "purpose"]
    list_select_related = ["agent_version__agent", "dataset_version__dataset"]
    inlines = [CaseResultInline]
    fields = [
        "agent_version",
        "dataset_version",
        "repetitions",
        "purpose",
        "status",
        "progress",
        "trials_error",
        "spend",
        "estimate_view",
        "judge_status_view",
        "summary",
        "requested_by",
        "created_at",
        "started_at",
        "finished_at",
    ]
    readonly_fields = ["progress", "spend", "estimate_view", "judge_status_view"]
    actions = ["cancel_runs"]

    def get_queryset(self, request):
        return Run.objects.for_user(request.user).select_related(
            "agent_version__agent", "dataset_version__dataset"
        )

    @admin.display(description="progress")
    def progress(self, obj):
        return f"{obj.trials_done}/{obj.trials_total}"

    @admin.display(description="spend so far")
    def spend(self, obj):
        """Agent and judge; calls without a price are counted, never shown as $0."""
        return describe_spend(obj)

    @admin.display(description="estimate before start")
    def estimate_view(self, obj):
        return describe_estimate(obj.estimate)

    @admin.display(description="judge now")
    def judge_status_view(self, obj):
        """The judge's status today (the newest check_judge probe), as new runs' estimates
        will carry it; this run's own, from its start, is in its estimate."""
        return judge_status()["summary"]

    cancel_runs = verb_action(
        CancelRun, "cancelled", description="Cancel selected runs", subject="run"
    )


class CheckResultInline(ReadOnlyMixin, admin.TabularInline):
    model = CheckResult
    fields = ["check_config", "score", "status", "blocking", "threshold", "reason", "evidence"]
    readonly_fields = fields
    extra = 0


@admin.register(Trial)
class TrialAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "run", "case", "repetition", "status", "latency_ms", "cost"]
    list_filter = ["status"]
    list_select_related = RUN_RELATED + ["case__dataset"]
    search_fields = ["case__key"]
    readonly_fields = ["transcript_warnings"]
    inlines = [CheckResultInline]

    @admin.display(description="agent cost", ordering="cost_usd")
    def cost(self, obj):
        if obj.status in (TrialStatus.PENDING, TrialStatus.RUNNING, TrialStatus.CANCELLED):
            return "-"
        return format_usd(obj.cost_usd, 0 if obj.cost_usd is not None else 1)

    def get_queryset(self, request):
        return super().get_queryset(request).filter(run__in=Run.objects.for_user(request.user))

    def get_fields(self, request, obj=None):
        fields = [f for f in super().get_fields(request, obj) if f != "transcript_warnings"]
        at = fields.index("transcript") if "transcript" in fields else len(fields)
        return [*fields[:at], "transcript_warnings", *fields[at:]]

    @admin.display(description="Warnings")
    def transcript_warnings(self, obj):
        """What the adapter warned about (`openai_chat`: a cut-off answer, a server that cannot
        pass tools), shown above the transcript so nobody trusts it without reading them."""
        warnings = (obj.transcript or {}).get("warnings") if obj else None
        if not isinstance(warnings, list) or not warnings:
            return "none"
        return format_html_join(mark_safe("<br>"), "⚠ {}", ((str(w),) for w in warnings))


@admin.register(CheckResult)
class CheckResultAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["trial", "check_config", "score", "status", "blocking"]
    list_filter = ["status", "blocking"]
    list_select_related = ["trial__case", "check_config"]  # their __str__ reads no more

    def get_queryset(self, request):
        runs = Run.objects.for_user(request.user)
        return super().get_queryset(request).filter(trial__run__in=runs)


@admin.register(CaseResult)
class CaseResultAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["run", "case", "passed", "flaky", "repetitions_passed", "repetitions"]
    list_filter = ["passed", "flaky"]
    list_select_related = RUN_RELATED + ["case__dataset"]

    def get_queryset(self, request):
        return super().get_queryset(request).filter(run__in=Run.objects.for_user(request.user))


def _ledger_queryset(request, queryset):
    """Judge calls and cost entries of the runs the user may see; those tied to no run
    (previews, summaries) only for global readers."""
    runs = Run.objects.for_user(request.user)
    scope = Q(run__in=runs)
    if request.user.has_perm(f"evaluations.view_{queryset.model._meta.model_name}"):
        scope |= Q(run__isnull=True)
    return queryset.filter(scope)


@admin.register(JudgeCall)
class JudgeCallAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "model", "rubric_id", "status", "cached", "prompt_tokens", "cost"]
    list_filter = ["status", "cached", "model"]

    @admin.display(description="usd", ordering="usd")
    def cost(self, obj):
        if obj.cached:
            return "cached (no cost)"
        return format_usd(obj.usd, 1 if obj.price_missing else 0)

    def get_queryset(self, request):
        return _ledger_queryset(request, super().get_queryset(request))


@admin.register(JudgeProbe)
class JudgeProbeAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """The judge's status page: every `check_judge` probe, newest first; the newest one of the
    configured server and model is the status runs are estimated with (`judge_status`)."""

    list_display = ["created_at", "model", "base_url", "ok", "failed", "priced"]
    list_filter = ["ok", "model"]
    fields = ["created_at", "model", "base_url", "ok", "priced", "report"]
    readonly_fields = fields

    @admin.display(description="failed families")
    def failed(self, obj):
        return ", ".join(obj.failed_families) or "-"

    @admin.display(description="per family")
    def report(self, obj):
        lines = []
        for name, family in sorted(obj.families.items()):
            line = (
                f"{name}: {'ok' if family.get('ok') else family.get('error_code')}, "
                f"{family.get('latency_ms', 0):.0f} ms, {family.get('prompt_tokens', 0)} in / "
                f"{family.get('completion_tokens', 0)} out, cap {family.get('max_tokens', 0)}"
            )
            if family.get("error"):
                line += f"; {family['error']}"
            if family.get("advice"):
                line += f" -> {family['advice']}"
            lines.append(line)
        return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in lines))

    def changelist_view(self, request, extra_context=None):
        # The one status line, as runs' estimates carry it, above the probes: a warning unless
        # the newest probe of the configured judge answered in every family.
        status = judge_status()
        level = messages.INFO if status.get("ok") else messages.WARNING
        self.message_user(request, f"Judge status: {status['summary']}", level)
        return super().changelist_view(request, extra_context)


@admin.register(CostEntry)
class CostEntryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["day", "kind", "agent", "model", "cost"]
    list_filter = ["kind", "day"]
    list_select_related = ["agent"]

    @admin.display(description="usd", ordering="usd")
    def cost(self, obj):
        return format_usd(obj.usd, 0 if obj.usd is not None else 1)

    def get_queryset(self, request):
        return _ledger_queryset(request, super().get_queryset(request))


@admin.register(ModelPrice)
class ModelPriceAdmin(AuditedEdits, admin.ModelAdmin):
    """Prices decide the budget gate (cost per verified outcome): each add, change and delete
    is audited with before and after (`evaluations.modelprice.*`)."""

    list_display = ["model", "usd_per_million_input", "usd_per_million_output", "updated_at"]


@admin.register(HumanLabel)
class HumanLabelAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Read-only: labels are given through `LabelCheckResult` (the API), which records the
    labelling Editor; a form here could put a label in someone else's name."""

    list_display = ["check_result", "labeled_by", "passed", "score", "created_at"]
    list_select_related = ["check_result__check_config", "check_result__trial__case", "labeled_by"]

    def get_queryset(self, request):
        runs = Run.objects.for_user(request.user)
        return super().get_queryset(request).filter(check_result__trial__run__in=runs)


# --- schedules (issue 13 point 4) --------------------------------------------------------------

SCHEDULE_FIELDS = (
    "agent",
    "agent_version",
    "dataset",
    "dataset_version",
    "repetitions",
    "cron",
    "interval_minutes",
    "active",
)


@admin.register(RunSchedule)
class RunScheduleAdmin(RefusalsMixin, admin.ModelAdmin):
    """Schedules, written through the schedule verbs (an Editor of the dataset or a Builder of
    the agent; audited; the django-q2 row in the same transaction). A refusal is a message on
    the form. The change page shows the estimate per run and per month, and the last and next
    run; the `/schedules/` page shows the estimate before saving."""

    list_display = ("__str__", "timing", "active", "last_run", "last_fired_at", "next_run")
    list_filter = ("active",)
    list_select_related = ("agent", "dataset", "q_schedule", "last_run")
    fields = (
        *SCHEDULE_FIELDS,
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
        user = request.user
        return (
            Agent.objects.for_user(user, "build").exists()
            or Dataset.objects.for_user(user, "edit").exists()
        )

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_view_permission(self, request, obj=None):
        if obj is None:
            return self._may_some(request) or self.get_queryset(request).exists()
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
        if change:
            stored = RunSchedule.objects.get(pk=obj.pk)
            changes = {
                k: v
                for k, v in fields.items()
                if k not in ("agent", "dataset") and getattr(stored, k) != v
            }
            action = UpdateSchedule(acting_user=request.user, schedule=stored, **changes)
        else:
            action = CreateSchedule(acting_user=request.user, **fields)
        saved = self.run_action(request, action)
        for field in saved._meta.concrete_fields:
            setattr(obj, field.attname, getattr(saved, field.attname))

    def delete_model(self, request, obj):
        self.run_action(request, DeleteSchedule(acting_user=request.user, schedule=obj))
