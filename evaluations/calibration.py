"""Calibration of model checks against human labels (DESIGN section 8, issue 3).

Editors label check results by hand (`HumanLabel`: pass/fail, or a score read as pass when it
meets the check's threshold). For each check we compare the judge's pass/fail with the humans'
and report Cohen's kappa and the confusion counts. A check marked `requires_calibration` counts
as blocking only once it has at least `min_labels` labels and kappa >= `kappa_floor`; until then
scoring treats it as informative and the result says why.
"""

from dataclasses import dataclass, field

from evaluations.choices import CheckStatus
from evaluations.models import HumanLabel


@dataclass
class Agreement:
    """Judge versus human on one check: the confusion counts and Cohen's kappa."""

    both_pass: int = 0
    both_fail: int = 0
    judge_pass_human_fail: int = 0
    judge_fail_human_pass: int = 0
    excluded: int = 0  # labels on results with no pass/fail (skipped, error, scored)
    label_ids: list = field(default_factory=list)

    @property
    def n(self):
        agree = self.both_pass + self.both_fail
        return agree + self.judge_pass_human_fail + self.judge_fail_human_pass

    @property
    def kappa(self):
        """Cohen's kappa; None with no labels. Perfect agreement on one class only gives 1.0
        (observed = expected = 1 makes the usual formula 0/0; there is no disagreement)."""
        n = self.n
        if n == 0:
            return None
        observed = (self.both_pass + self.both_fail) / n
        judge_pass = (self.both_pass + self.judge_pass_human_fail) / n
        human_pass = (self.both_pass + self.judge_fail_human_pass) / n
        expected = judge_pass * human_pass + (1 - judge_pass) * (1 - human_pass)
        if expected == 1:
            return 1.0 if observed == 1 else 0.0
        return (observed - expected) / (1 - expected)

    def as_dict(self):
        return {
            "n": self.n,
            "kappa": None if self.kappa is None else round(self.kappa, 4),
            "confusion": {
                "both_pass": self.both_pass,
                "both_fail": self.both_fail,
                "judge_pass_human_fail": self.judge_pass_human_fail,
                "judge_fail_human_pass": self.judge_fail_human_pass,
            },
            "excluded": self.excluded,
        }


def _human_passed(label, threshold):
    if label.passed is not None:
        return label.passed
    if label.score is not None and threshold is not None:
        return label.score >= threshold
    return None


def agreement_for(check_ids):
    """Agreement per check id, over every labelled result of the checks (one query)."""
    results = {cid: Agreement() for cid in check_ids}
    labels = HumanLabel.objects.filter(check_result__check_config_id__in=check_ids).select_related(
        "check_result"
    )
    for label in labels:
        result = label.check_result
        agreement = results[result.check_config_id]
        human = _human_passed(label, result.threshold)
        if result.status not in (CheckStatus.PASSED, CheckStatus.FAILED) or human is None:
            agreement.excluded += 1
            continue
        judge = result.status == CheckStatus.PASSED
        if judge and human:
            agreement.both_pass += 1
        elif not judge and not human:
            agreement.both_fail += 1
        elif judge:
            agreement.judge_pass_human_fail += 1
        else:
            agreement.judge_fail_human_pass += 1
    return results


def calibration_gate(checks):
    """For checks that require calibration: `{label: reason}` for each one that is not yet
    calibrated (it must be scored as informative, with that reason). Calibrated checks and
    checks that do not require calibration are absent.

    Labels are looked up over every check with the same label, kind and params in the same
    dataset (earlier versions too), so freezing a new version does not lose the calibration.
    """
    wanted = [c for c in checks if c.requires_calibration]
    if not wanted:
        return {}
    from evaluations.models import Check

    pending = {}
    for check in wanted:
        same = Check.objects.filter(
            dataset_version__dataset_id=check.dataset_version.dataset_id,
            label=check.label,
            kind=check.kind,
        )
        ids = [c.pk for c in same if c.version_hash == check.version_hash]
        merged = Agreement()
        for agreement in agreement_for(ids).values():
            merged.both_pass += agreement.both_pass
            merged.both_fail += agreement.both_fail
            merged.judge_pass_human_fail += agreement.judge_pass_human_fail
            merged.judge_fail_human_pass += agreement.judge_fail_human_pass
        kappa = merged.kappa
        if merged.n < check.min_labels:
            pending[check.label] = (
                f"not calibrated: {merged.n}/{check.min_labels} human labels; "
                "scored as informative until then"
            )
        elif kappa is None or kappa < check.kappa_floor:
            pending[check.label] = (
                f"not calibrated: kappa {kappa:.2f} below the floor {check.kappa_floor:.2f}; "
                "scored as informative until then"
            )
    return pending
