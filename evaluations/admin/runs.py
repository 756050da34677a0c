"""Admin for runs and what they recorded: trials, check results, case results, judge calls and
probes, the cost ledger, model prices and human labels. Records of what happened are read-only
here; a run's page counts its trials, case and check results, each count a link to its list
filtered to the run (a run may hold 100,000 trials), and a trial's page lists its check
results (one per check)."""

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db.models import Count, Q
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from evaluations.actions.cancel_run import CancelRun
from evaluations.choices import TrialStatus
from evaluations.costs.texts import describe_estimate, describe_spend, format_usd
from evaluations.judge.probe import judge_status
from evaluations.models import (
    CaseResult,
    CheckResult,
    CostEntry,
    HumanLabel,
    JudgeCall,
    JudgeProbe,
    ModelPrice,
    Run,
    Trial,
)
from sherlock.core.admin import (
    AdminMixin,
    AuditedEdits,
    AuditsHiddenObjects,
    EstimatedCountPaginator,
    ReadOnlyMixin,
    verb_action,
)
from sherlock.core.permissions import within

# What a run's __str__ reads: select it with the run, or every row costs queries.
RUN_RELATED = ["run__agent_version__agent", "run__dataset_version__dataset"]
# A trial's columns that may be big (an uploaded transcript may be 1 MB) and that no list shows.
TRIAL_BIG = ["transcript", "tool_effects", "outcome_evidence"]


class BigList(AdminMixin):
    """A list of records that may hold millions of rows (a run of 100,000 trials has 400,000
    check results): newest first by primary key, which its index serves without sorting the
    table (the models' own orderings join and sort every row), one count, not a second one
    of the unfiltered table, and that count the planner's estimate when the list is a whole
    big table on PostgreSQL ("about 800,000 check results", `EstimatedCountPaginator`;
    `bench/pages_scale.py`). The app's pagination template says "about" for it."""

    ordering = ["-pk"]
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    # Columns of the rows, or of the rows they select, that the list does not show and that
    # may be big: a page of 100 trials of 50 kB transcripts took 85 ms instead of 51 without
    # them (on the bench's transcripts of 70 bytes it makes no difference).
    list_defer: list[Any] = []

    def get_changelist(self, request, **kwargs):
        return DeferringChangeList


class DeferringChangeList(ChangeList):
    """The changelist of a `BigList`: its rows without their `list_defer` columns (a row's
    change page still reads them all)."""

    def get_queryset(self, request, exclude_parameters=None):
        rows = super().get_queryset(request, exclude_parameters)
        return rows.defer(*getattr(self.model_admin, "list_defer", ()))


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
    fields = [
        "results",
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
    readonly_fields = ["results", "progress", "spend", "estimate_view", "judge_status_view"]
    actions = ["cancel_runs"]

    @admin.display(description="what it recorded")
    def results(self, obj):
        """Counts, each a link to the list it counts, filtered to this run: a run of 100,000
        trials would be a page of 100,000 rows inline (`bench/pages_scale.py`). One query."""
        cases = CaseResult.objects.filter(run=obj).aggregate(
            total=Count("pk"),
            failed=Count("pk", filter=Q(passed=False)),
            flaky=Count("pk", filter=Q(flaky=True)),
        )

        def listed(model, text, **filters):
            url = reverse(f"admin:evaluations_{model._meta.model_name}_changelist")
            return format_html('<a href="{}?{}">{}</a>', url, urlencode(filters), text)

        run = {"run__id__exact": obj.pk}
        lines = [
            format_html(
                '<a href="{}">The run\'s page</a>: its verdict, contract and results grid',
                reverse("evaluations:run-detail", args=[obj.pk]),
            ),
            format_html(
                "{} ({} in error)",
                listed(Trial, f"{obj.trials_total} trials", **run),
                listed(Trial, f"{obj.trials_error}", **run, status__exact=TrialStatus.ERROR),
            ),
            format_html(
                "{}: {} failed, {} flaky",
                listed(CaseResult, f"{cases['total']} case results", **run),
                listed(CaseResult, f"{cases['failed']}", **run, passed__exact=0),
                listed(CaseResult, f"{cases['flaky']}", **run, flaky__exact=1),
            ),
            format_html(
                "{} ({})",
                listed(CheckResult, "Check results", trial__run__id__exact=obj.pk),
                listed(CheckResult, "failed", trial__run__id__exact=obj.pk, status__exact="failed"),
            ),
            format_html(
                "{}, {}",
                listed(JudgeCall, "Judge calls", **run),
                listed(CostEntry, "cost lines", **run),
            ),
        ]
        return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in lines))

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
    fields = readonly_fields = (
        "check_config",
        "score",
        "status",
        "blocking",
        "threshold",
        "reason",
        "evidence",
    )
    extra = 0


@admin.register(Trial)
class TrialAdmin(BigList, ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "run", "case", "repetition", "status", "latency_ms", "cost"]
    list_filter = ["status"]
    list_select_related = RUN_RELATED + ["case__dataset"]
    search_fields = ["case__key"]
    list_defer = TRIAL_BIG
    readonly_fields = ["transcript_warnings"]
    inlines = [CheckResultInline]

    @admin.display(description="agent cost", ordering="cost_usd")
    def cost(self, obj):
        if obj.status in (TrialStatus.PENDING, TrialStatus.RUNNING, TrialStatus.CANCELLED):
            return "-"
        return format_usd(obj.cost_usd, 0 if obj.cost_usd is not None else 1, item=True)

    def get_queryset(self, request):
        return within(super().get_queryset(request), "run", Run.objects.for_user(request.user))

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
class CheckResultAdmin(BigList, ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["trial", "check_config", "score", "status", "blocking"]
    list_filter = ["status", "blocking"]
    list_select_related = ["trial__case", "check_config"]  # their __str__ reads no more
    list_defer = ["evidence", *(f"trial__{name}" for name in TRIAL_BIG)]

    def lookup_allowed(self, lookup, value, request=None):
        # A run's page links to its check results (the run is two relations away).
        return lookup == "trial__run__id__exact" or super().lookup_allowed(lookup, value, request)

    def get_queryset(self, request):
        runs = Run.objects.for_user(request.user)
        return within(super().get_queryset(request), "trial__run", runs)


@admin.register(CaseResult)
class CaseResultAdmin(BigList, ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["run", "case", "passed", "flaky", "repetitions_passed", "repetitions"]
    list_filter = ["passed", "flaky"]
    list_select_related = RUN_RELATED + ["case__dataset"]

    def get_queryset(self, request):
        return within(super().get_queryset(request), "run", Run.objects.for_user(request.user))


def _ledger_queryset(request, queryset):
    """Judge calls and cost entries of the runs the user may see; those tied to no run
    (previews, summaries) only for global readers."""
    runs = Run.objects.for_user(request.user)
    scope = Q(run__in=runs)
    if request.user.has_perm(f"evaluations.view_{queryset.model._meta.model_name}"):
        if not runs.query.has_filters():
            return queryset  # every run, and the lines of none: no filter (`within` says why)
        scope |= Q(run__isnull=True)
    return queryset.filter(scope)


@admin.register(JudgeCall)
class JudgeCallAdmin(BigList, ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "model", "rubric_id", "status", "cached", "prompt_tokens", "cost"]
    list_filter = ["status", "cached", "model"]
    list_defer = ["request", "response", "raw_answer"]  # a judge's prompt holds the answer

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
    fields = readonly_fields = ("created_at", "model", "base_url", "ok", "priced", "report")

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
class CostEntryAdmin(BigList, ReadOnlyMixin, admin.ModelAdmin):
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
class HumanLabelAdmin(BigList, ReadOnlyMixin, admin.ModelAdmin):
    """Read-only: labels are given through `LabelCheckResult` (the API), which records the
    labelling Editor; a form here could put a label in someone else's name."""

    list_display = ["check_result", "labeled_by", "passed", "score", "created_at"]
    list_select_related = ["check_result__check_config", "check_result__trial__case", "labeled_by"]
    list_defer = ["check_result__evidence", *(f"check_result__trial__{n}" for n in TRIAL_BIG)]

    def get_queryset(self, request):
        runs = Run.objects.for_user(request.user)
        return within(super().get_queryset(request), "check_result__trial__run", runs)
