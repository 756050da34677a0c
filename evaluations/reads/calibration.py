"""Calibration of model checks against human labels.

Editors label check results by hand (`HumanLabel`: pass/fail, or a score read as pass when it
meets the check's threshold). For each check we compare the judge's pass/fail with the humans'
and report Cohen's kappa, its 95 % interval and the confusion counts.

The rule: a check marked `requires_calibration` counts as blocking only while it has
at least `min_labels` labels under its current judging configuration and the LOWER bound of
kappa's 95 % interval is >= `kappa_floor`; until then scoring treats it as informative and the
result says why (evaluations.engine.shards loads `calibration_gate` once per shard). Each label
stores the check's `calibration_key` (kind, params, judge model: evaluations.models.datasets.
judging_key): a label given under another key belongs to an old version of the check, is kept
and shown on the calibration page, and does not count.
"""

import math
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, F, Q

from evaluations.choices import CheckMode, CheckStatus
from evaluations.models import Check, CheckResult, HumanLabel
from evaluations.reads.figures import stored_checks

# z of a two-sided 95 % normal interval.
Z95 = 1.96

# Other places a check's results are labelled (production's traces, `production.online.labels`):
# each is a callable taking check ids and returning its labels of those checks' results, objects
# with a `HumanLabel`'s reading (`check_id`, `calibration_key`, `passed`, `score`, `note`,
# `labeled_by`, `created_at`, `pk`, and `check_result` with `status` and `threshold`). An app
# above this one registers its source in its `ready()`: the calibration counts those labels
# too, and knows nothing of where they come from.
LABEL_SOURCES: list[Any] = []


def other_labels(check_ids):
    """The labels of `check_ids`' results that the registered sources hold."""
    found = []
    for source in LABEL_SOURCES:
        found.extend(source(list(check_ids)))
    return found


@dataclass
class Agreement:
    """Judge versus human on one check: the confusion counts, Cohen's kappa and its interval."""

    both_pass: int = 0
    both_fail: int = 0
    judge_pass_human_fail: int = 0
    judge_fail_human_pass: int = 0
    excluded: int = 0  # labels on results with no pass/fail (skipped, error, scored)
    label_ids: list = field(default_factory=list)

    def add(self, judge, human):
        if judge and human:
            self.both_pass += 1
        elif not judge and not human:
            self.both_fail += 1
        elif judge:
            self.judge_pass_human_fail += 1
        else:
            self.judge_fail_human_pass += 1

    @property
    def n(self):
        agree = self.both_pass + self.both_fail
        return agree + self.judge_pass_human_fail + self.judge_fail_human_pass

    def _proportions(self):
        n = self.n
        observed = (self.both_pass + self.both_fail) / n
        judge_pass = (self.both_pass + self.judge_pass_human_fail) / n
        human_pass = (self.both_pass + self.judge_fail_human_pass) / n
        expected = judge_pass * human_pass + (1 - judge_pass) * (1 - human_pass)
        return observed, expected

    @property
    def kappa(self):
        """Cohen's kappa; None with no labels. Perfect agreement on one class only gives 1.0
        (observed = expected = 1 makes the usual formula 0/0; there is no disagreement)."""
        if self.n == 0:
            return None
        observed, expected = self._proportions()
        if expected == 1:
            return 1.0 if observed == 1 else 0.0
        return (observed - expected) / (1 - expected)

    @property
    def kappa_se(self):
        """The standard error of kappa by Cohen's (1960) simple large-sample approximation:

            SE = sqrt(p_o (1 - p_o) / (n (1 - p_e)^2))

        with p_o the observed and p_e the chance agreement. It is the usual textbook interval
        (not the Fleiss, Cohen and Everitt 1969 variance, which also weighs the marginals);
        with few labels it is wide, which is the point of gating on its lower bound. None with
        no labels; 0 when p_e = 1 (one class only, no disagreement possible to estimate)."""
        if self.n == 0:
            return None
        observed, expected = self._proportions()
        if expected == 1:
            return 0.0
        return math.sqrt(observed * (1 - observed) / (self.n * (1 - expected) ** 2))

    @property
    def kappa95(self):
        """(low, high): kappa +/- 1.96 SE, clipped to kappa's range [-1, 1]; None with no
        labels."""
        if self.n == 0:
            return None
        kappa, se = self.kappa, self.kappa_se
        return (max(-1.0, kappa - Z95 * se), min(1.0, kappa + Z95 * se))

    def as_dict(self):
        interval = self.kappa95
        return {
            "n": self.n,
            "kappa": None if self.kappa is None else round(self.kappa, 4),
            "kappa95": None if interval is None else [round(v, 4) for v in interval],
            "confusion": {
                "both_pass": self.both_pass,
                "both_fail": self.both_fail,
                "judge_pass_human_fail": self.judge_pass_human_fail,
                "judge_fail_human_pass": self.judge_fail_human_pass,
            },
            "excluded": self.excluded,
        }


def human_passed(label, threshold):
    """The human's pass/fail: `passed`, or a score read against the result's threshold."""
    if label.passed is not None:
        return label.passed
    if label.score is not None and threshold is not None:
        return label.score >= threshold
    return None


def judge_passed(result):
    """The judge's pass/fail on a result, or None when it gave none (scored, skipped, error)."""
    if result.status == CheckStatus.PASSED:
        return True
    if result.status == CheckStatus.FAILED:
        return False
    return None


def _tally(agreement, label):
    result = label.check_result
    judge, human = judge_passed(result), human_passed(label, result.threshold)
    if judge is None or human is None:
        agreement.excluded += 1
        return False
    agreement.add(judge, human)
    return True


def agreement_for(check_ids):
    """Agreement per check id, over every labelled result of the checks given under the
    check's current calibration key (one query for the labels, one for the checks)."""

    keys = {c.pk: c.calibration_key for c in Check.objects.filter(pk__in=check_ids)}
    results = {cid: Agreement() for cid in check_ids}
    labels = (
        HumanLabel.objects.alias(check_id=F("check_result__check_config_id") + 0)
        .filter(check_id__in=check_ids)  # from the labels: `same_check_labels` says why
        .select_related("check_result")
    )
    for label in labels:
        check_id = label.check_result.check_config_id
        if label.calibration_key == keys.get(check_id):
            _tally(results[check_id], label)
    for label in other_labels(check_ids):
        if label.calibration_key == keys.get(label.check_id):
            _tally(results[label.check_id], label)
    return results


def same_check_labels(check):
    """Every label of the check and of its namesakes in the dataset (earlier versions too, so
    freezing a new version does not lose the calibration), each with its result and labeller."""
    namesakes = Check.objects.filter(
        dataset_version__dataset_id=check.dataset_version.dataset_id,
        label=check.label,
        kind=check.kind,
    ).values("pk")
    # `+ 0` keeps the database from reaching the labels through the index of results by check
    # (every result of the check: 100,000 in a run of 100,000 trials, each probed for a label):
    # SQLite, without statistics, took that path; from the labels, each finds its result by key.
    # Only the label's own result is joined (by key): with the trial, its run and case in the
    # same query too, SQLite's planner (no statistics) started from every case version.
    return (
        HumanLabel.objects.alias(check_id=F("check_result__check_config_id") + 0)
        .filter(check_id__in=namesakes)
        .select_related("labeled_by", "check_result")
    )


@dataclass
class Calibration:
    """A check's calibration now: the agreement under its current key, whether it may block,
    why not, and how many labels belong to older versions of it."""

    check: Any  # the Check
    agreement: Agreement
    old_labels: int

    @property
    def calibrated(self):
        return self.reason == ""

    @property
    def reason(self):
        check, agreement = self.check, self.agreement
        if agreement.n < check.min_labels:
            old = f" ({self.old_labels} from an earlier version)" if self.old_labels else ""
            return (
                f"not calibrated: {agreement.n}/{check.min_labels} human labels{old}; "
                "scored as informative until then"
            )
        low = agreement.kappa95[0]
        if low < check.kappa_floor:
            return (
                f"not calibrated: kappa {agreement.kappa:.2f} (95 % lower bound {low:.2f}) "
                f"below the floor {check.kappa_floor:.2f}; scored as informative until then"
            )
        return ""


def namesakes_of(check):
    """The ids of the check and of its namesakes in its dataset (earlier versions too)."""
    return Check.objects.filter(
        dataset_version__dataset_id=check.dataset_version.dataset_id,
        label=check.label,
        kind=check.kind,
    ).values_list("pk", flat=True)


def calibration_of(check, labels=None):
    """The `Calibration` of one check from its labels (`same_check_labels` and the other
    sources' labels of the check and its namesakes, unless given)."""
    if labels is None:
        labels = list(same_check_labels(check))
        if LABEL_SOURCES:
            labels += other_labels(namesakes_of(check))
    agreement, old, key = Agreement(), 0, check.calibration_key  # a hash: computed once
    for label in labels:
        if label.calibration_key != key:
            old += 1
        elif _tally(agreement, label):
            agreement.label_ids.append(label.pk)
    return Calibration(check=check, agreement=agreement, old_labels=old)


def calibration_gate(checks):
    """For checks that require calibration: `{label: reason}` for each one that is not yet
    calibrated (it must be scored as informative, with that reason). Calibrated checks and
    checks that do not require calibration are absent. One query per such check."""
    pending = {}
    for check in checks:
        if check.requires_calibration:
            calibration = calibration_of(check)
            if not calibration.calibrated:
                pending[check.label] = calibration.reason
    return pending


def informative_checks(runs):
    """Which checks of `runs` counted as informative and why, for a gate's decision snapshot
    (governance.publishing.decision.make_decision): one row `{run, check, results, informative,
    why}` per check that did not block on every one of its results. The counts come from the results
    the engine wrote (what really counted), as a finished run's figures store them
    (`evaluations.reads.figures`); the reason is the check's mode, its calibration (as it stands
    now, with the rule's figures) or per-case overrides. Two queries (one without unfinished runs)
    plus one per uncalibrated check."""

    counts: list[Any] = []
    live: list[Any] = []
    for run in runs:
        stored = stored_checks(run)
        if stored is None:
            live.append(run.pk)
            continue
        counts.extend(
            {
                "trial__run_id": run.pk,
                "check_config_id": row["id"],
                "total": row["results"],
                "informative": row["informative"],
            }
            for row in stored
        )
    if live:
        counts.extend(
            CheckResult.objects.filter(trial__run_id__in=live)
            .values("trial__run_id", "check_config_id")
            .annotate(total=Count("pk"), informative=Count("pk", filter=Q(blocking=False)))
            .order_by()
        )
    counts = sorted(
        (row for row in counts if row["informative"]),
        key=lambda row: (row["trial__run_id"], row["check_config_id"]),
    )
    checks = Check.objects.select_related("dataset_version").in_bulk(
        {row["check_config_id"] for row in counts}
    )
    rows = []
    for row in counts:
        check = checks[row["check_config_id"]]
        if check.mode == CheckMode.INFORMATIVE:
            why = "its mode is informative"
        elif check.requires_calibration:
            calibration = calibration_of(check)
            why = calibration.reason or ("not calibrated when the run scored it (calibrated since)")
        else:
            why = "made informative by case overrides"
        rows.append(
            {
                "run": row["trial__run_id"],
                "check": check.label,
                "check_id": check.pk,
                "results": row["total"],
                "informative": row["informative"],
                "why": why,
            }
        )
    return rows
