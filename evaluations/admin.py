"""Admin for datasets, checks, runs and their results.

Runs, trials, check results, case results, judge calls and the cost ledger are records of what
happened: read-only here. A run's page lists its case results; a trial's page its check results.
"""

from django.contrib import admin
from django.db.models import Count

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


class ReadOnlyMixin:
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "owner", "created_at"]
    search_fields = ["slug", "name"]
    raw_id_fields = ["owner"]
    prepopulated_fields = {"slug": ["name"]}

    def get_queryset(self, request):
        return Dataset.objects.for_user(request.user, "view").select_related("owner")


class CheckInline(admin.TabularInline):
    model = Check
    fields = ["label", "kind", "params", "threshold", "mode", "judge_model", "position"]
    extra = 0


class CaseVersionInline(admin.TabularInline):
    model = CaseVersion
    fields = ["case", "input", "tags"]
    raw_id_fields = ["case"]
    extra = 0
    show_change_link = True


@admin.register(DatasetVersion)
class DatasetVersionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "frozen_at", "frozen_by", "n_cases", "n_checks"]
    list_select_related = ["dataset", "frozen_by"]
    readonly_fields = ["frozen_at", "frozen_by", "created_at"]
    inlines = [CheckInline, CaseVersionInline]

    def get_queryset(self, request):
        datasets = Dataset.objects.for_user(request.user, "view")
        return (
            super()
            .get_queryset(request)
            .filter(dataset__in=datasets)
            .annotate(n_cases=Count("case_versions", distinct=True))
            .annotate(n_checks=Count("checks", distinct=True))
        )

    @admin.display(ordering="n_cases")
    def n_cases(self, obj):
        return obj.n_cases

    @admin.display(ordering="n_checks")
    def n_checks(self, obj):
        return obj.n_checks

    def get_inlines(self, request, obj):
        # A frozen version is immutable: its cases and checks are shown, not edited.
        return [] if obj is not None and obj.is_frozen else self.inlines


@admin.register(Case)
class CaseAdmin(admin.ModelAdmin):
    list_display = ["key", "dataset", "created_at"]
    list_select_related = ["dataset"]
    search_fields = ["key"]
    list_filter = ["dataset"]


@admin.register(CaseVersion)
class CaseVersionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "dataset_version"]
    list_select_related = ["case", "dataset_version__dataset"]
    raw_id_fields = ["case", "dataset_version"]
    search_fields = ["case__key"]


@admin.register(Check)
class CheckAdmin(admin.ModelAdmin):
    list_display = ["label", "kind", "threshold", "mode", "dataset_version"]
    list_filter = ["kind", "mode"]
    list_select_related = ["dataset_version__dataset"]
    raw_id_fields = ["dataset_version"]


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
        "spend_usd",
        "created_at",
    ]
    list_filter = ["status", "purpose"]
    list_select_related = ["agent_version__agent", "dataset_version__dataset"]
    inlines = [CaseResultInline]

    def get_queryset(self, request):
        return Run.objects.for_user(request.user).select_related(
            "agent_version__agent", "dataset_version__dataset"
        )

    @admin.display(description="progress")
    def progress(self, obj):
        return f"{obj.trials_done}/{obj.trials_total}"


class CheckResultInline(ReadOnlyMixin, admin.TabularInline):
    model = CheckResult
    fields = ["check_config", "score", "status", "blocking", "threshold", "reason", "evidence"]
    readonly_fields = fields
    extra = 0


@admin.register(Trial)
class TrialAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "run", "case", "repetition", "status", "latency_ms", "cost_usd"]
    list_filter = ["status"]
    list_select_related = ["run", "case"]
    search_fields = ["case__key"]
    inlines = [CheckResultInline]

    def get_queryset(self, request):
        return super().get_queryset(request).filter(run__in=Run.objects.for_user(request.user))


@admin.register(CheckResult)
class CheckResultAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["trial", "check_config", "score", "status", "blocking"]
    list_filter = ["status", "blocking"]
    list_select_related = ["trial__case", "check_config"]


@admin.register(CaseResult)
class CaseResultAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["run", "case", "passed", "flaky", "repetitions_passed", "repetitions"]
    list_filter = ["passed", "flaky"]
    list_select_related = ["run", "case"]


@admin.register(JudgeCall)
class JudgeCallAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "model", "rubric_id", "status", "cached", "prompt_tokens", "usd"]
    list_filter = ["status", "cached", "model"]


@admin.register(CostEntry)
class CostEntryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["day", "kind", "agent", "model", "usd"]
    list_filter = ["kind", "day"]
    list_select_related = ["agent"]


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
    list_display = ["model", "usd_per_million_input", "usd_per_million_output", "updated_at"]


@admin.register(HumanLabel)
class HumanLabelAdmin(admin.ModelAdmin):
    list_display = ["check_result", "labeled_by", "passed", "score", "created_at"]
    raw_id_fields = ["check_result"]
