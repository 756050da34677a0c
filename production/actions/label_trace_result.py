"""LabelTraceResult: an Editor labels a model check's result on a production trace by hand, to
calibrate that check (as `LabelCheckResult` labels a run's)."""

from django.conf import settings

from evaluations.actions.label_check_result import LABELLABLE
from evaluations.checks import MODEL_KINDS
from evaluations.models import JudgeCall
from evaluations.models.datasets import judging_key
from production.models import TraceLabel
from sherlock.core.actions import Action
from sherlock.core.errors import ActionDenied, ActionInvalid
from sherlock.core.limits import NOTE_MAX
from sherlock.core.permissions import user_can


class LabelTraceResult(Action):
    """Record (or replace) the acting Editor's label of one check's result on one scored trace:
    pass/fail or a score in [0, 1]. Only results of a model check the rule reused from a dataset
    version, judged (passed, failed or scored); the Editor role on that dataset. The label
    counts toward the check's calibration when the trace was judged by the model the check
    judges with; by another (the rule pinned another), it is kept under that model's key."""

    noun = "trace_result"
    verb = "label"

    text_limits = {"note": NOTE_MAX}

    def __init__(self, *, acting_user, trace_score, check, passed=None, score=None, note=""):
        super().__init__(acting_user=acting_user)
        self.trace_score = trace_score
        self.check_config = check
        self.passed = passed
        self.score = score
        self.note = note

    def check(self):
        rule = self.trace_score.rule
        check = self.check_config
        if rule is None or rule.library_version_id != check.dataset_version_id:
            raise ActionInvalid(
                "Only the results of a check the online rule reuses from a dataset version "
                "can be labelled.",
                field="check",
            )
        if not user_can(self.acting_user, "edit", check.dataset_version.dataset):
            raise ActionDenied("You may not label results of this dataset (Editor role needed).")
        if check.kind not in MODEL_KINDS:
            raise ActionInvalid("Only model checks are labelled.", field="check")
        self.result = next(
            (
                item
                for item in self.trace_score.results or []
                if isinstance(item, dict) and item.get("label") == check.label
            ),
            None,
        )
        if self.result is None or self.result.get("status") not in LABELLABLE:
            raise ActionInvalid(
                "This result has no verdict of the judge to agree or disagree with.",
                field="check",
            )
        if (self.passed is None) == (self.score is None):
            raise ActionInvalid("Give pass/fail or a score, not both.", field="passed")
        if self.score is not None and not 0 <= self.score <= 1:
            raise ActionInvalid("score must be in [0, 1]", field="score")

    def perform(self):
        check = self.check_config
        call_ids = (self.result or {}).get("judge_call_ids") or []
        model = (
            JudgeCall.objects.filter(pk__in=call_ids).values_list("model", flat=True).first()
            or self.trace_score.rule.judge_model
        )
        # Judged as the check judges (its own model, or the configured one when it names none):
        # the check's own key, so the label counts; another model: a key of its own, kept and
        # shown, not counted (as a run's label after the check's model changed).
        effective = check.judge_model or settings.SHERLOCK_JUDGE_MODEL
        key = (
            check.calibration_key
            if model == effective
            else judging_key(check.kind, check.params, model)
        )
        label, _ = TraceLabel.objects.update_or_create(
            trace_score=self.trace_score,
            check_config=check,
            labeled_by=self.acting_user,
            defaults={
                "passed": self.passed,
                "score": self.score,
                "note": self.note,
                "calibration_key": key,
            },
        )
        self.audit(
            target=label,
            after={
                "trace_id": self.trace_score.trace.trace_id,
                "agent": self.trace_score.agent.slug,
                "check": check.label,
                "dataset_version": str(check.dataset_version),
                "passed": self.passed,
                "score": self.score,
                "note": self.note,
            },
        )
        return label
