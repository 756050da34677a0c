"""Admin for datasets, their versions, cases and checks.

Cases and checks are written here by Editors, in a draft version: the forms are in
`evaluations/admin/forms.py`, every save and delete goes through the case and check actions,
and a refusal is shown on the form with the input kept (`RefusalsMixin`), never as a bare 403.
The check form's preview calls `preview_check`, the code of `POST /api/v1/checks/preview/`.
"""

import json
from functools import partial
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from evaluations.actions.case_fields import CASE_FIELDS
from evaluations.actions.check_fields import CHECK_FIELDS
from evaluations.actions.create_case import CreateCase
from evaluations.actions.create_check import CreateCheck
from evaluations.actions.create_dataset import DATASET_FIELDS, CreateDataset
from evaluations.actions.create_draft_dataset_version import CreateDraftDatasetVersion
from evaluations.actions.delete_check import DeleteCheck
from evaluations.actions.remove_case import RemoveCase
from evaluations.actions.update_case import UpdateCase
from evaluations.actions.update_check import UpdateCheck
from evaluations.admin.base import (
    DatasetScopedMixin,
    RefusalsMixin,
    visible_datasets,
    with_counts,
)
from evaluations.admin.cases_io import EXPORT_ACTIONS, DatasetCasesIOMixin
from evaluations.admin.docs import docs_view
from evaluations.admin.forms import CaseVersionForm, CheckForm
from evaluations.admin.freeze import freeze_view
from evaluations.admin.start_run import StartRunPermission, start_run_action
from evaluations.api.checks import may_preview, preview_check
from evaluations.checks import REGISTRY
from evaluations.checks.base import as_text
from evaluations.judge.setup import check_warning, judges_docs_url
from evaluations.models import (
    Case,
    CaseVersion,
    Check,
    Dataset,
    DatasetVersion,
)
from sherlock.core.admin import (
    AuditedEdits,
    AuditsHiddenObjects,
    PickerFilter,
    ReadOnlyInline,
    ReadOnlyMixin,
    any_visible,
    message_as_written,
    verb_action,
)
from sherlock.core.errors import ActionError
from sherlock.core.inputs import parse_id
from sherlock.core.permissions import user_can, within
from sherlock.core.pickers import picker_media


@admin.register(Dataset)
class DatasetAdmin(DatasetCasesIOMixin, RefusalsMixin, AuditedEdits, admin.ModelAdmin):
    """Creating a dataset goes through `CreateDataset`: its owner is whoever creates it, and
    the creation is audited. Its name and description are plain data, changed in place and
    audited with before and after (`evaluations.dataset.update`, `AuditedEdits`). The
    change page lists the versions and links to importing cases and to comparing versions
    (evaluations/admin/cases_io.py)."""

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
            return any_visible(request, Dataset) or super().has_view_permission(request)
        return user_can(request.user, "view", obj)

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_change_permission(self, request, obj=None):
        if obj is None:
            return super().has_change_permission(request)
        return user_can(request.user, "edit", obj)

    def has_edit_permission(self, request):
        return any_visible(request, Dataset, "edit")

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


# The cases a version's page shows; the rest are one link away, in the case list.
CASES_SHOWN = 20


class CheckInline(ReadOnlyInline):
    model = Check
    # A version's checks at a glance: every check field but the calibration tuning.
    fields = readonly_fields = tuple(
        name for name in CHECK_FIELDS if name not in ("min_labels", "kappa_floor")
    )


@admin.register(DatasetVersion)
class DatasetVersionAdmin(AuditsHiddenObjects, StartRunPermission, admin.ModelAdmin):
    """Versions list their checks and count their cases; a draft's page links to adding a case
    or a check (their own pages, through the actions), a frozen one's says it is read-only.
    "Freeze…" on a draft's page (or the list's action) opens the confirmation
    (`evaluations.admin.freeze`); "Run an agent on it…" starts runs (`evaluations.admin.start_run`).

    A version may hold 10,000 cases: its page shows the first `CASES_SHOWN` of them, each a
    link to its page, and links to the case list filtered to the version (paged, searchable by
    key), so the page costs the same whatever the cases (`bench/pages_scale.py`)."""

    list_display = ["__str__", "frozen_at", "frozen_by", "n_cases", "n_checks"]
    list_select_related = ["dataset", "frozen_by"]
    search_fields = ["dataset__slug", "dataset__name", "note"]  # the pickers' autocomplete
    fields = readonly_fields = (
        "dataset",
        "number",
        "note",
        "created_at",
        "frozen_at",
        "frozen_by",
        "cases",
    )
    inlines = [CheckInline]
    actions = ["freeze", "start_run", *EXPORT_ACTIONS]

    def get_queryset(self, request):
        rows = within(super().get_queryset(request), "dataset", visible_datasets(request))
        return with_counts(rows)

    @admin.display(description="cases")
    def cases(self, obj):
        """The version's first cases by key, each a link to its page, and a link to all of them
        (the case list filtered to this version)."""
        shown = list(obj.case_versions.select_related("case").order_by("case__key")[:CASES_SHOWN])
        listing = reverse("admin:evaluations_caseversion_changelist")
        all_link = format_html(
            '<a href="{}?dataset_version__id__exact={}">{}</a>',
            listing,
            obj.pk,
            f"All {obj.n_cases} cases of this version" if obj.n_cases else "The case list",
        )
        if not shown:
            return format_html("No case yet. {}", all_link)
        rows = format_html_join(
            "",
            '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td></tr>',
            (
                (
                    reverse("admin:evaluations_caseversion_change", args=[cv.pk]),
                    cv.case.key,
                    Truncator(as_text(cv.input)).chars(120),
                    ", ".join(map(str, cv.tags or [])),
                )
                for cv in shown
            ),
        )
        more = (
            f"the first {len(shown)} of {obj.n_cases} by key"
            if obj.n_cases > len(shown)
            else f"all {obj.n_cases}"
        )
        return format_html(
            "<p>{}; {}.</p><table><thead><tr><th>key</th><th>input</th><th>tags</th></tr>"
            "</thead><tbody>{}</tbody></table>",
            more.capitalize(),
            all_link,
            rows,
        )

    def has_add_permission(self, request):
        return False  # a draft starts from the dataset's "Start a new draft version" action

    def has_change_permission(self, request, obj=None):
        return False  # nothing here is edited in place: cases and checks have their pages

    def has_delete_permission(self, request, obj=None):
        return False  # versions are history (runs pin them); a draft is emptied case by case

    def has_view_permission(self, request, obj=None):
        if obj is None:
            return any_visible(request, Dataset)
        return user_can(request.user, "view", obj.dataset)

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_edit_permission(self, request):
        return any_visible(request, Dataset, "edit")

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

    def get_urls(self):
        freeze = self.admin_site.admin_view(partial(freeze_view, self))
        return [
            path("<int:object_id>/freeze/", freeze, name="evaluations_datasetversion_freeze"),
            *super().get_urls(),
        ]

    @admin.action(description="Freeze the selected draft version…", permissions=["edit"])
    def freeze(self, request, queryset):
        """Freezing is confirmed on the version's own page, which says what becomes read-only
        and takes a note (`evaluations.admin.freeze`): one version at a time."""
        versions = list(queryset[:2])
        if len(versions) != 1:
            self.message_user(
                request,
                "Freeze one draft version at a time: each is confirmed on its own page.",
                messages.ERROR,
            )
            return None
        return redirect("admin:evaluations_datasetversion_freeze", versions[0].pk)


@admin.register(Case)
class CaseAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """A case's stable identity; its content is edited per version (Case versions)."""

    list_display = ["key", "dataset", "created_at"]
    list_select_related = ["dataset"]
    show_full_result_count = False  # one count of a dataset's 10,000 cases, not two
    search_fields = ["key"]
    # The dataset typed and picked, never a sidebar of every dataset.
    list_filter = [("dataset", PickerFilter.of("dataset"))]

    @property
    def media(self):
        return super().media + picker_media()

    def get_queryset(self, request):
        return within(super().get_queryset(request), "dataset", visible_datasets(request))

    def has_view_permission(self, request, obj=None):
        if obj is None:
            return any_visible(request, Dataset)
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
    show_full_result_count = False  # one count of a version's 10,000 cases, not two
    search_fields = ["case__key"]
    actions = ["remove_selected"]
    remove_selected = verb_action(
        RemoveCase,
        "removed",
        description="Remove the selected cases from their draft",
        subject="case_version",
        permission="delete",
    )

    def changelist_view(self, request, extra_context=None):
        # Reached from a version's page with ?dataset_version__id__exact=N: say whose cases.
        wanted = request.GET.get("dataset_version__id__exact", "")
        version = (
            DatasetVersion.objects.filter(pk=wanted, dataset__in=visible_datasets(request))
            .select_related("dataset")
            .first()
            if wanted.isdigit()
            else None
        )
        if version is not None:
            extra_context = {"title": f"Cases of {version}", **(extra_context or {})}
        return super().changelist_view(request, extra_context)

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
    readonly_fields = ["calibration_link"]
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
            return [(None, {"fields": ["dataset_version", *CHECK_FIELDS, "calibration_link"]})]
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
                {
                    "fields": [
                        *(["calibration_link"] if obj is not None else []),
                        "requires_calibration",
                        "min_labels",
                        "kappa_floor",
                        "position",
                    ]
                },
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
        context: dict[str, Any] = {"result": None, "errors": []}
        check = Check.objects.filter(
            pk=parse_id(request.POST.get("_check")) or 0,  # 0: no check
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
        """docs/<name>.md of this installation as a page (`evaluations.admin.docs`): the
        formats the case and check forms link to, each link at its section."""
        return docs_view(self, request, name)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        warning = check_warning(obj)
        if warning:
            self.message_user(
                request,
                format_html(
                    '{} <a href="{}" target="_blank">Judge settings</a>', warning, judges_docs_url()
                ),
                messages.WARNING,
            )

    @admin.display(description="calibration")
    def calibration_link(self, obj):
        """One link from a saved model check to its calibration page."""
        if (
            obj is None
            or obj.pk is None
            or not getattr(REGISTRY.get(obj.kind), "uses_model", False)
        ):
            return "-"
        return format_html(
            '<a href="{}">Calibration of {}: agreement with hand labels</a>',
            reverse("evaluations:calibration", args=[obj.pk]),
            obj.label,
        )

    def create_action(self, request, data, fields):
        return CreateCheck(
            acting_user=request.user, dataset_version=data["dataset_version"], **fields
        )

    def update_action(self, request, obj, changes):
        return UpdateCheck(acting_user=request.user, check=obj, **changes)

    def delete_action(self, request, obj):
        return DeleteCheck(acting_user=request.user, check=obj)
