"""Admin for datasets, checks, runs and their results.

Runs, trials, check results, case results, judge calls and the cost ledger are records of what
happened: read-only here. A run's page lists its case results; a trial's page its check results.
"""

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from evaluations.actions._case_fields import CASE_FIELDS
from evaluations.actions._check_fields import CHECK_FIELDS
from evaluations.actions.cancel_run import CancelRun
from evaluations.actions.create_case import CreateCase
from evaluations.actions.create_check import CreateCheck
from evaluations.actions.create_draft_dataset_version import CreateDraftDatasetVersion
from evaluations.actions.delete_check import DeleteCheck
from evaluations.actions.freeze_dataset_version import FreezeDatasetVersion
from evaluations.actions.remove_case import RemoveCase
from evaluations.actions.update_case import UpdateCase
from evaluations.actions.update_check import UpdateCheck
from evaluations.costs import describe_estimate, describe_spend
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
    ModelPrice,
    Run,
    Trial,
)
from sherlock.core.admin import ReadOnlyInline, ReadOnlyMixin, verb_action
from sherlock.core.errors import ActionError
from sherlock.core.permissions import user_can

# What a run's __str__ reads: select it with the run, or every row costs queries.
RUN_RELATED = ["run__agent_version__agent", "run__dataset_version__dataset"]


def visible_datasets(request):
    return Dataset.objects.for_user(request.user, "view")


class DatasetScopedMixin:
    """Dataset-side admin: changelists show what the user may see; changing needs the Editor
    verb on that very dataset (global or object grant) and a draft version; every write goes
    through the evaluations actions, so admin edits are validated and audited like API ones."""

    def dataset_of(self, obj):
        return obj.dataset_version.dataset

    def version_of(self, obj):
        return obj.dataset_version

    def may_edit(self, request, obj):
        if obj is None:
            return request.user.has_perm("evaluations.edit_dataset") or (
                Dataset.objects.for_user(request.user, "edit").exists()
            )
        return user_can(request.user, "edit", self.dataset_of(obj)) and not (
            self.version_of(obj).is_frozen
        )

    def has_add_permission(self, request, obj=None):
        return self.may_edit(request, None)

    def has_change_permission(self, request, obj=None):
        return self.may_edit(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self.may_edit(request, obj)

    edited_fields = ()  # the content fields the actions take

    def get_queryset(self, request):
        datasets = visible_datasets(request)
        return super().get_queryset(request).filter(dataset_version__dataset__in=datasets)

    def run_action(self, request, action):
        try:
            return action.execute()
        except ActionError as exc:
            raise PermissionDenied(str(exc)) from exc

    def save_model(self, request, obj, form, change):
        fields = {name: getattr(obj, name) for name in self.edited_fields}
        if change:
            changes = {k: v for k, v in fields.items() if k in form.changed_data}
            action = self.update_action(request, obj, changes)
        else:
            action = self.create_action(request, obj, fields)
        obj.pk = self.run_action(request, action).pk

    def delete_model(self, request, obj):
        self.run_action(request, self.delete_action(request, obj))


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "owner", "created_at"]
    search_fields = ["slug", "name"]
    raw_id_fields = ["owner"]
    prepopulated_fields = {"slug": ["name"]}
    actions = ["start_draft"]
    start_draft = verb_action(
        CreateDraftDatasetVersion,
        "new draft version started",
        description="Start a new draft version (copy of the last frozen one)",
        subject="dataset",
    )

    def get_queryset(self, request):
        return visible_datasets(request).select_related("owner")

    def has_change_permission(self, request, obj=None):
        if obj is None:
            return super().has_change_permission(request)
        return user_can(request.user, "edit", obj)


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


@admin.register(DatasetVersion)
class DatasetVersionAdmin(admin.ModelAdmin):
    """Versions list their cases and checks; edit those on their own pages (through the
    actions), and freeze a draft with the admin action."""

    list_display = ["__str__", "frozen_at", "frozen_by", "n_cases", "n_checks"]
    list_select_related = ["dataset", "frozen_by"]
    fields = ["dataset", "number", "note", "created_at", "frozen_at", "frozen_by"]
    readonly_fields = fields
    inlines = [CheckInline, CaseVersionInline]
    actions = ["freeze"]

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

    @admin.display(ordering="n_cases")
    def n_cases(self, obj):
        return obj.n_cases

    @admin.display(ordering="n_checks")
    def n_checks(self, obj):
        return obj.n_checks

    freeze = verb_action(
        FreezeDatasetVersion,
        "frozen",
        description="Freeze the selected draft versions",
        subject="dataset_version",
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
        return request.user.has_perm("evaluations.view_case")


@admin.register(CaseVersion)
class CaseVersionAdmin(DatasetScopedMixin, admin.ModelAdmin):
    list_display = ["__str__", "dataset_version"]
    list_select_related = ["case", "dataset_version__dataset"]
    raw_id_fields = ["case", "dataset_version"]
    search_fields = ["case__key"]
    edited_fields = CASE_FIELDS

    def create_action(self, request, obj, fields):
        return CreateCase(
            acting_user=request.user,
            dataset_version=obj.dataset_version,
            key=obj.case.key,
            **fields,
        )

    def update_action(self, request, obj, changes):
        return UpdateCase(acting_user=request.user, case_version=obj, **changes)

    def delete_action(self, request, obj):
        return RemoveCase(acting_user=request.user, case_version=obj)


@admin.register(Check)
class CheckAdmin(DatasetScopedMixin, admin.ModelAdmin):
    """Checks are validated (params against the kind's schema) by the form and again by the
    action, which audits the change."""

    list_display = ["label", "kind", "threshold", "mode", "dataset_version"]
    list_filter = ["kind", "mode", "requires_calibration"]
    list_select_related = ["dataset_version__dataset"]
    raw_id_fields = ["dataset_version"]
    edited_fields = CHECK_FIELDS

    def create_action(self, request, obj, fields):
        return CreateCheck(acting_user=request.user, dataset_version=obj.dataset_version, **fields)

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
class RunAdmin(ReadOnlyMixin, admin.ModelAdmin):
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
        "summary",
        "requested_by",
        "created_at",
        "started_at",
        "finished_at",
    ]
    readonly_fields = ["progress", "spend", "estimate_view"]
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
    list_display = ["id", "run", "case", "repetition", "status", "latency_ms", "cost_usd"]
    list_filter = ["status"]
    list_select_related = RUN_RELATED + ["case__dataset"]
    search_fields = ["case__key"]
    readonly_fields = ["transcript_warnings"]
    inlines = [CheckResultInline]

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
    list_display = ["id", "model", "rubric_id", "status", "cached", "prompt_tokens", "usd"]
    list_filter = ["status", "cached", "model"]

    def get_queryset(self, request):
        return _ledger_queryset(request, super().get_queryset(request))


@admin.register(CostEntry)
class CostEntryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["day", "kind", "agent", "model", "usd"]
    list_filter = ["kind", "day"]
    list_select_related = ["agent"]

    def get_queryset(self, request):
        return _ledger_queryset(request, super().get_queryset(request))


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
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
