"""The Run aggregate: a run, its trials (case x repetition), check results and case results."""

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents.models import Agent
from evaluations.choices import (
    BillingCoverage,
    CaseStatus,
    CheckStatus,
    LabelSource,
    OutcomeVerdict,
    RunPurpose,
    RunStatus,
    TrialStatus,
)
from evaluations.judge.setup import NO_JUDGE, judge_configured
from evaluations.models.datasets import Dataset
from sherlock.core.fields import MoneyField
from sherlock.core.permissions import within


class RunQuerySet(models.QuerySet):
    def for_user(self, user, action="view"):
        """Runs of the agents the user may see (a run is scoped by its agent), and, to read,
        the runs on the datasets the user may see: an Editor of a dataset reads the runs on it
        (its cases' answers are what they curate), a scoped Editor holding no agent too."""

        by_agent = within(self, "agent_version__agent", Agent.objects.for_user(user, action))
        if action != "view" or not by_agent.query.has_filters():
            return by_agent
        datasets = Dataset.objects.for_user(user, "view")
        if not datasets.query.has_filters():
            return self  # every dataset: every run
        return self.filter(
            models.Q(pk__in=by_agent.values("pk"))
            | models.Q(dataset_version__dataset__in=datasets.values("pk"))
        )


class TrialQuerySet(models.QuerySet):
    def for_user(self, user, action="view"):
        """Trials of the runs the user may see (a trial is scoped by its run's agent)."""
        return within(self, "run", Run.objects.for_user(user, action))


class Run(models.Model):
    """One evaluation of one agent version against one dataset version, with repetitions.

    Progress counters live here (not only in django-q2's tables) and are updated as trials
    finish; `finalized_at` is set exactly once, by whichever worker finishes the last trial.
    """

    agent_version = models.ForeignKey(
        "agents.AgentVersion", on_delete=models.PROTECT, related_name="runs"
    )
    dataset_version = models.ForeignKey(
        "evaluations.DatasetVersion", on_delete=models.PROTECT, related_name="runs"
    )
    repetitions = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    purpose = models.CharField(max_length=10, choices=RunPurpose.choices, default=RunPurpose.ADHOC)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    schedule = models.ForeignKey(
        "evaluations.RunSchedule",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="runs",
        help_text="The schedule that started it (purpose `scheduled`).",
    )
    comparability = models.JSONField(
        default=dict, blank=True, help_text="Dataset version, check versions, judge models."
    )
    trials_total = models.PositiveIntegerField(default=0)
    trials_done = models.PositiveIntegerField(default=0)
    trials_error = models.PositiveIntegerField(default=0)
    spend_usd = MoneyField(total=True, default=Decimal(0), help_text="Agent and judge, priced.")
    judge_spend_usd = MoneyField(total=True, default=Decimal(0))
    unpriced_calls = models.PositiveIntegerField(
        default=0, help_text="Agent and judge calls whose cost is unknown (price missing)."
    )
    estimate = models.JSONField(default=dict, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    figures = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="Aggregates computed once when the run finished (evaluations.run_figures).",
    )
    judge_summary = models.JSONField(
        default=dict,
        blank=True,
        help_text="The judge's summary on request (evaluations.actions.summarize_run).",
    )
    # Stopping early (docs/contract.md, "Stopping early"): the cases run in an order drawn from
    # `seed`, and the run stops once its gates are decided on the cases finished in that order.
    stop_early = models.BooleanField(default=False)
    seed = models.PositiveBigIntegerField(null=True, blank=True)
    sequential = models.JSONField(
        default=dict,
        blank=True,
        help_text="A run that stops early: its gates' decisions over the cases in seed order "
        "(evaluations.engine.stopping).",
    )
    error = models.TextField(blank=True)
    source = models.JSONField(
        default=dict,
        blank=True,
        help_text="Where a client run came from (docs/client.md): git commit, branch and "
        "repository, CI provider, job URL and run id, pull request, the client's config.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    finalized_at = models.DateTimeField(null=True, blank=True)
    # When shards were last enqueued: the reaper re-enqueues a run that shows no sign of life.
    enqueued_at = models.DateTimeField(null=True, blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        # Lists (API and pages) show the newest runs first: read them off the index.
        indexes = [models.Index(fields=["-created_at", "-id"], name="run_newest_first")]
        constraints = [
            models.CheckConstraint(condition=Q(repetitions__gte=1), name="run_repetitions_min_1"),
            models.CheckConstraint(
                condition=Q(status__in=RunStatus.values), name="run_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(trials_done__lte=models.F("trials_total")),
                name="run_done_le_total",
            ),
        ]

    def __str__(self):
        return f"Run #{self.pk} {self.agent_version} on {self.dataset_version}"

    @property
    def summary_unavailable(self):
        """Why the judge cannot summarise this run now, or None: the run page's button and
        `evaluations.actions.summarize_run` (the engine imports models, never the actions)."""
        if self.status != RunStatus.COMPLETED:
            return "Only a completed run can be summarised."
        if not judge_configured():
            return NO_JUDGE  # the one sentence every no-judge place says
        return None

    @property
    def is_adhoc_on_draft(self):
        return self.dataset_version.frozen_at is None


class ContractEvidence(models.Model):
    """The evidence the contract reads of one execution, the same columns wherever it ran: a
    run's `Trial` and a production trace's `TraceScore` (filled by the same evidence step,
    `evaluations.engine.evidence.collect_evidence_for`), so a run's five measures and a
    production window's are the same aggregate over the same names."""

    declared_complete = models.BooleanField(null=True, blank=True)
    outcome_verdict = models.CharField(max_length=12, choices=OutcomeVerdict.choices, blank=True)
    outcome_evidence = models.JSONField(default=dict, blank=True)
    progress = models.JSONField(default=dict, blank=True)
    wait = models.JSONField(null=True, blank=True)
    tool_effects = models.JSONField(default=list, blank=True)
    # The contract's per-trial counts, derived from `progress`, `wait` and
    # `tool_effects` by `evaluations.engine.evidence.contract_counts` whenever those are written, so
    # that a run's five measures are one aggregate query (evaluations.contract.db).
    # `active_windows` includes the windows of an unowned wait (a stall, never a delta);
    # `excluded_wait_windows` are those of an owned wait. Effect counts leave out denied calls.
    active_windows = models.PositiveIntegerField(default=0)
    windows_with_evidence_delta = models.PositiveIntegerField(default=0)
    excluded_wait_windows = models.PositiveIntegerField(default=0)
    stalled_wait_windows = models.PositiveIntegerField(default=0)
    stale_collector_windows = models.PositiveIntegerField(default=0)
    effects_verified = models.PositiveIntegerField(default=0)
    effects_failed = models.PositiveIntegerField(default=0)
    effects_unknown = models.PositiveIntegerField(default=0)
    effects_denied = models.PositiveIntegerField(default=0)
    effects_without_state = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True


class Trial(ContractEvidence):
    """One execution of one case in a run (case x repetition), with its transcript and evidence.

    Unique on (run, case, repetition), so a re-delivered task cannot plan a trial twice. A worker
    takes a trial by compare-and-set from `pending` (or from `running` past its lease) to
    `running` with a fresh lease; the reaper re-queues trials whose lease ran out.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="trials")
    case = models.ForeignKey("evaluations.Case", on_delete=models.PROTECT, related_name="+")
    case_version = models.ForeignKey(
        "evaluations.CaseVersion", on_delete=models.PROTECT, related_name="trials"
    )
    repetition = models.PositiveIntegerField()
    status = models.CharField(
        max_length=10, choices=TrialStatus.choices, default=TrialStatus.PENDING
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    transcript = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = MoneyField(null=True, blank=True)
    billing_coverage = models.CharField(
        max_length=10, choices=BillingCoverage.choices, default=BillingCoverage.MISSING
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A client run's trial (docs/client.md): when its answer was uploaded. The answer waits in
    # `transcript` (or `error`, when the client's function failed) while the trial is pending;
    # the engine scores it instead of calling the agent (evaluations.engine.trials).
    uploaded_at = models.DateTimeField(null=True, blank=True)

    objects = TrialQuerySet.as_manager()

    class Meta:
        ordering = ["run", "case_version__case__key", "repetition"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "case", "repetition"], name="trial_unique_repetition"
            ),
            models.CheckConstraint(
                condition=Q(status__in=TrialStatus.values), name="trial_status_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["run", "status"]),
            # The API pages a run's trials by a cursor on the id: this reads a page straight
            # off the index instead of sorting every trial of the run for each page.
            models.Index(fields=["run", "id"], name="trial_run_id_page"),
        ]

    def __str__(self):
        return f"{self.case.key} #{self.repetition}"

    @property
    def work_key(self):
        """A client run's id of this trial (docs/client.md): `"<case_version_id>:<repetition>"`,
        computed the same by a client that resumes the run."""
        return f"{self.case_version_id}:{self.repetition}"


class CheckResult(models.Model):
    """One check's verdict on one trial: a score in [0, 1] (or none) and a status."""

    # Not a column: the JudgeCall rows a result being written rests on (the engine sets it).
    calls: list[Any]

    trial = models.ForeignKey(Trial, on_delete=models.CASCADE, related_name="check_results")
    check_config = models.ForeignKey(
        "evaluations.Check", on_delete=models.PROTECT, related_name="results"
    )
    score = models.FloatField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=CheckStatus.choices)
    blocking = models.BooleanField(
        default=True, help_text="Counted toward the case's pass (mode after overrides)."
    )
    threshold = models.FloatField(null=True, blank=True)
    reason = models.TextField(blank=True)
    evidence = models.JSONField(default=dict, blank=True)
    judge_call_ids = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["trial", "check_config__position", "check_config__label"]
        constraints = [
            models.UniqueConstraint(
                fields=["trial", "check_config"], name="checkresult_unique_check"
            ),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=0, score__lte=1),
                name="checkresult_score_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=Q(status__in=CheckStatus.values), name="checkresult_status_valid"
            ),
        ]
        indexes = [
            # The trials that failed a blocking check (a failed repetition, the run's case
            # results): few rows, found without reading every result of the run.
            models.Index(
                fields=["trial"],
                condition=Q(blocking=True, status=CheckStatus.FAILED),
                name="checkresult_blocking_failed",
            ),
        ]

    def __str__(self):
        return f"{self.check_config.label}: {self.status}"


class CaseResult(models.Model):
    """A case's result over all repetitions of a run: per check the mean score and counts
    (`checks`), and its state (`status`, `evaluations.checks.scoring.case_state`): `passed` only
    when every repetition passed, `failed`, `flaky` when some passed and others failed, `unscored`
    (with `reason`) when no verdict could be reached. `passed` and `flaky` say the same as
    booleans, for older readers: `passed` is never true for an unscored case."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="case_results")
    case = models.ForeignKey("evaluations.Case", on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=10, choices=CaseStatus.choices, default=CaseStatus.FAILED)
    reason = models.CharField(
        max_length=60, blank=True, help_text="Why an unscored case has no verdict."
    )
    passed = models.BooleanField()
    flaky = models.BooleanField(default=False)
    repetitions_passed = models.PositiveIntegerField(default=0)
    repetitions_unscored = models.PositiveIntegerField(default=0)
    repetitions = models.PositiveIntegerField(default=0)
    checks = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["run", "case__key"]
        constraints = [
            models.UniqueConstraint(fields=["run", "case"], name="caseresult_unique_case"),
        ]

    def __str__(self):
        return f"{self.case.key}: {self.status}"

    @property
    def state_words(self):
        """The case's state as every table says it: "passed 2/2", "flaky 1/2", "unscored (judge
        unavailable) 0/2" (repetitions passed of run)."""
        why = f" ({self.reason})" if self.status == CaseStatus.UNSCORED and self.reason else ""
        return f"{self.status}{why} {self.repetitions_passed}/{self.repetitions}"


def case_counts_words(summary):
    """A run's case counts as every surface says them: "cases passed 12/12 decided, 18
    unscored, 0 flaky"; the unscored always beside the rate's counts. `summary` is
    `Run.summary`."""
    summary = summary or {}
    cases = summary.get("cases") or 0
    unscored = summary.get("unscored") or 0
    passed = summary.get("passed") or 0
    flaky = summary.get("flaky") or 0
    return (
        f"cases passed: {passed}/{cases - unscored} decided, unscored: {unscored}, flaky: {flaky}"
    )


class HumanLabel(models.Model):
    """An Editor's hand label of one check result, used to calibrate a model check.

    `calibration_key` is the check's `judging_key` when the label was given: a label counts
    toward calibration only while the check still judges the same way
    (evaluations.reads.calibration).
    """

    check_result = models.ForeignKey(
        CheckResult, on_delete=models.CASCADE, related_name="human_labels"
    )
    labeled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    passed = models.BooleanField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    note = models.TextField(blank=True)
    calibration_key = models.CharField(
        max_length=16,
        blank=True,
        db_index=True,
        help_text="The check's judging configuration (kind, params, judge model) when labelled.",
    )
    source = models.CharField(
        max_length=10,
        choices=LabelSource.choices,
        default=LabelSource.QUEUE,
        help_text="How the result was chosen for a label: the queue's ranking, or a random "
        "calibration sample (only those correct the judge's pass rate).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["check_result", "labeled_by"], name="humanlabel_one_per_user"
            ),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=0, score__lte=1),
                name="humanlabel_score_in_unit_interval",
            ),
        ]

    def __str__(self):
        verdict = self.score if self.score is not None else self.passed
        return f"{self.check_result} labelled {verdict} by {self.labeled_by}"
