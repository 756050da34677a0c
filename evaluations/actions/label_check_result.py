"""LabelCheckResult: an Editor labels a check result by hand, to calibrate a model check."""

from evaluations.choices import CheckStatus, LabelSource
from evaluations.models import Dataset, HumanLabel
from sherlock.core.actions import Action
from sherlock.core.errors import ActionDenied, ActionInvalid
from sherlock.core.limits import NOTE_MAX
from sherlock.core.permissions import user_can

# A skipped or error result has no verdict of the judge to agree or disagree with.
LABELLABLE = (CheckStatus.PASSED, CheckStatus.FAILED, CheckStatus.SCORED)


class LabelCheckResult(Action):
    """Record (or replace) the acting Editor's label of one check result: pass/fail or a score
    in [0, 1]. One label per user and result; the latest one counts. Only scored results can
    be labelled (skipped and error are refused on `check_result`). The label stores the check's
    calibration key, so it counts only while the check judges the same way, and its `source`:
    the queue's ranking, or a random calibration sample (`LabelSource`)."""

    noun = "check_result"
    verb = "label"

    text_limits = {"note": NOTE_MAX}

    def __init__(self, *, acting_user, check_result, passed=None, score=None, note="", source=None):
        super().__init__(acting_user=acting_user)
        self.source = source or LabelSource.QUEUE
        self.check_result = check_result
        self.passed = passed
        self.score = score
        self.note = note

    def check_role(self):
        if not Dataset.objects.for_user(self.acting_user, "edit").exists():
            raise ActionDenied("Labelling needs the Editor role (global or of a dataset).")

    def check(self):
        dataset = self.check_result.check_config.dataset_version.dataset
        if not user_can(self.acting_user, "edit", dataset):
            raise ActionDenied("You may not label results of this dataset (Editor role needed).")
        if self.check_result.status not in LABELLABLE:
            raise ActionInvalid(
                f"only scored results can be labelled; this one is {self.check_result.status}",
                field="check_result",
            )
        if self.passed is None and self.score is None:
            raise ActionInvalid("give `passed` or `score`", field="passed")
        if self.score is not None and not 0 <= self.score <= 1:
            raise ActionInvalid("score must be in [0, 1]", field="score")
        if self.source not in LabelSource.values:
            raise ActionInvalid(f"unknown label source {self.source!r}", field="source")

    def perform(self):
        key = self.check_result.check_config.calibration_key
        label, created = HumanLabel.objects.update_or_create(
            check_result=self.check_result,
            labeled_by=self.acting_user,
            defaults={
                "passed": self.passed,
                "score": self.score,
                "note": self.note,
                "calibration_key": key,
                "source": self.source,
            },
        )
        self.audit(
            target=self.check_result,
            after={
                "passed": self.passed,
                "score": self.score,
                "judge": self.check_result.status,
                "calibration_key": key,
                "source": self.source,
            },
        )
        return label
